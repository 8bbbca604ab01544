//! `kernels-cu` sources against this crate's kernel table (no GPU needed; NVRTC for the
//! compile checks): every kernel declared once, the launch comments, the definitions.

#[test]
fn kernel_table_matches_the_sources() {
    spdnn_cuda::kernel_table::assert_kernel_table(spdnn_dense::KERNELS);
}
