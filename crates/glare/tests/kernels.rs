//! `kernels-cu/glare.cu` against this crate's kernel table, and `glare.cuh` on its own
//! with [`spdnn_glare::DEFINES`] (no GPU needed; NVRTC for the compile checks).

#[test]
fn kernel_table_matches_the_sources() {
    spdnn_cuda::kernel_table::assert_kernel_table(spdnn_glare::KERNELS);
}

#[test]
fn glare_header_stands_alone_and_needs_every_definition() {
    spdnn_cuda::kernel_table::assert_header("glare.cuh", &[spdnn_glare::DEFINES]);
}

#[test]
fn definitions_are_the_rust_constants() {
    let value = |name: &str| {
        spdnn_glare::DEFINES
            .iter()
            .find(|d| d.name == name)
            .map(|d| d.value as usize)
    };
    assert_eq!(value("GLARE_CENSUS_WORDS"), Some(spdnn_glare::CENSUS_WORDS));
    assert_eq!(
        value("GLARE_MAX_ROW_UNITS"),
        Some(spdnn_glare::model::MAX_ROW_UNITS)
    );
    assert_eq!(
        value("GLARE_WRITE_BACKS"),
        Some(spdnn_cuda::census::WRITE_BACKS)
    );
}
