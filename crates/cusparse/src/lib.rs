//! The yardstick: every layer as cuSPARSE's generic SpMM followed by a bias-and-clip
//! kernel, the way a user without this project would write it.
//!
//! `Z = Y·W` is computed as `Zᵀ = Wᵀ·Yᵀ`: `Wᵀ` in CSR (row = output neuron), and the
//! row-major `Y` (rows × N) is the column-major `Yᵀ` (N × rows, leading dimension N), so
//! no activation is ever transposed. cuSPARSE is reached through cudarc's `sys` level
//! (it has no safe API); every handle and descriptor is released on drop.

use std::ffi::c_void;
use std::time::Instant;

use spdnn_cuda::cudarc::cusparse::sys;
use spdnn_cuda::cudarc::driver::{DevicePtr, DevicePtrMut};
use spdnn_cuda::rows::{self, GpuInference, RunSpec};
use spdnn_cuda::{
    CudaError, DeviceBuffer, DriverResultExt, Gpu, KernelSource, LaunchConfig, PushKernelArg,
};
use spdnn_formats::{Csr, SparseMatrix};

/// `kernels-cu/cusparse_epilogue.cu`.
pub const EPILOGUE: KernelSource = KernelSource {
    name: "cusparse_epilogue.cu",
    source: include_str!("../../../kernels-cu/cusparse_epilogue.cu"),
};

/// Whether libcusparse can be loaded (never panics).
pub fn cusparse_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    unsafe { sys::is_culib_present() }
}

fn check(status: sys::cusparseStatus_t, what: &str) -> Result<(), CudaError> {
    if status == sys::cusparseStatus_t::CUSPARSE_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(CudaError::InvalidArgument(format!(
            "cuSPARSE {what} failed: {status:?}"
        )))
    }
}

/// A cuSPARSE handle bound to a stream.
struct Handle(sys::cusparseHandle_t);

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle was created by cusparseCreate and is destroyed once.
        unsafe { sys::cusparseDestroy(self.0) };
    }
}

/// A dense-matrix descriptor.
struct DenseMatrix(sys::cusparseDnMatDescr_t);

impl Drop for DenseMatrix {
    fn drop(&mut self) {
        // SAFETY: created by cusparseCreateDnMat, destroyed once.
        unsafe { sys::cusparseDestroyDnMat(self.0) };
    }
}

/// One layer's `Wᵀ` on the device with its CSR descriptor.
struct SparseLayer {
    descriptor: sys::cusparseSpMatDescr_t,
    _offsets: DeviceBuffer<u32>,
    _cols: DeviceBuffer<u32>,
    _values: DeviceBuffer<f32>,
}

impl Drop for SparseLayer {
    fn drop(&mut self) {
        // SAFETY: created by cusparseCreateCsr, destroyed once, before its arrays.
        unsafe { sys::cusparseDestroySpMat(self.descriptor) };
    }
}

/// A column-major N × rows descriptor over a row-major rows × N buffer.
fn dense(
    gpu: &Gpu,
    y: &mut DeviceBuffer<f32>,
    n: usize,
    rows: usize,
) -> Result<DenseMatrix, CudaError> {
    let (pointer, _sync) = (**y).device_ptr_mut(gpu.stream());
    let mut descriptor = std::ptr::null_mut();
    // SAFETY: the buffer holds n·rows floats and outlives the descriptor.
    check(
        unsafe {
            sys::cusparseCreateDnMat(
                &mut descriptor,
                n as i64,
                rows as i64,
                n as i64,
                pointer as *mut c_void,
                sys::cudaDataType::CUDA_R_32F,
                sys::cusparseOrder_t::CUSPARSE_ORDER_COL,
            )
        },
        "CreateDnMat",
    )?;
    Ok(DenseMatrix(descriptor))
}

fn sparse_layer(gpu: &Gpu, w: &Csr) -> Result<SparseLayer, CudaError> {
    let transposed = w.transpose();
    let offsets = gpu.upload(transposed.row_offsets())?;
    // An empty layer still gets one-element arrays: zero-byte allocations are not allowed.
    let (cols, values) = if transposed.nnz() == 0 {
        (gpu.upload(&[0u32])?, gpu.upload(&[0f32])?)
    } else {
        (
            gpu.upload(transposed.col_indices())?,
            gpu.upload(transposed.values())?,
        )
    };
    let stream = gpu.stream();
    let mut descriptor = std::ptr::null_mut();
    {
        let (offsets_ptr, _a) = (*offsets).device_ptr(stream);
        let (cols_ptr, _b) = (*cols).device_ptr(stream);
        let (values_ptr, _c) = (*values).device_ptr(stream);
        // SAFETY: the arrays hold a valid CSR of nnz entries and live as long as the descriptor.
        check(
            unsafe {
                sys::cusparseCreateCsr(
                    &mut descriptor,
                    transposed.nrows() as i64,
                    transposed.ncols() as i64,
                    transposed.nnz() as i64,
                    offsets_ptr as *mut c_void,
                    cols_ptr as *mut c_void,
                    values_ptr as *mut c_void,
                    sys::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                    sys::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                    sys::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO,
                    sys::cudaDataType::CUDA_R_32F,
                )
            },
            "CreateCsr",
        )?;
    }
    Ok(SparseLayer {
        descriptor,
        _offsets: offsets,
        _cols: cols,
        _values: values,
    })
}

/// Runs the cuSPARSE baseline on `input` (rows × N) through `layers`.
pub fn infer(
    gpu: &Gpu,
    layers: &[Csr],
    input: &Csr,
    bias: f32,
    upper: f32,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    let wall = Instant::now();
    let n = rows::check_problem(layers, input, bias, upper)?;
    if layers.iter().any(|w| w.nnz() > i32::MAX as usize) {
        return Err(CudaError::InvalidArgument(
            "a layer has more entries than 32-bit cuSPARSE indices allow".into(),
        ));
    }
    if !cusparse_present() {
        return Err(CudaError::InvalidArgument(
            "libcusparse was not found on the library path (it ships with the CUDA toolkit)".into(),
        ));
    }
    let rows_count = input.nrows();
    let stream = gpu.stream().clone();
    let mut raw = std::ptr::null_mut();
    // SAFETY: creates a handle; checked below.
    check(unsafe { sys::cusparseCreate(&mut raw) }, "Create")?;
    let handle = Handle(raw);
    // SAFETY: the stream outlives the handle (both live to the end of this function).
    check(
        unsafe { sys::cusparseSetStream(handle.0, stream.cu_stream() as sys::cudaStream_t) },
        "SetStream",
    )?;

    let sparse = layers
        .iter()
        .map(|w| sparse_layer(gpu, w))
        .collect::<Result<Vec<_>, _>>()?;
    let mut y_a = gpu.alloc_zeros::<f32>(rows_count * n)?;
    let mut y_b = gpu.alloc_zeros::<f32>(rows_count * n)?;
    let dense_a = dense(gpu, &mut y_a, n, rows_count)?;
    let dense_b = dense(gpu, &mut y_b, n, rows_count)?;
    let mut row_flags = gpu.alloc_zeros::<u8>(rows_count)?;
    let (alpha, beta) = (1.0f32, 0.0f32);
    let operation = sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;
    let algorithm = sys::cusparseSpMMAlg_t::CUSPARSE_SPMM_ALG_DEFAULT;
    let mut workspace_bytes = 0usize;
    for layer in &sparse {
        let mut bytes = 0usize;
        // SAFETY: descriptors are valid; only queries a size.
        check(
            unsafe {
                sys::cusparseSpMM_bufferSize(
                    handle.0,
                    operation,
                    operation,
                    &alpha as *const f32 as *const c_void,
                    layer.descriptor,
                    dense_a.0,
                    &beta as *const f32 as *const c_void,
                    dense_b.0,
                    sys::cudaDataType::CUDA_R_32F,
                    algorithm,
                    &mut bytes,
                )
            },
            "SpMM_bufferSize",
        )?;
        workspace_bytes = workspace_bytes.max(bytes);
    }
    let workspace = gpu.alloc_zeros::<u8>(workspace_bytes.max(1))?;
    let epilogue = gpu.function(&EPILOGUE, "cusparse_bias_clip")?;
    let total = (rows_count * n) as u64;
    // Launch: grid-stride, grid min(ceil(total / 256), 1M), block 256, no shared memory.
    let epilogue_config = LaunchConfig {
        grid_dim: (rows::grid_for(rows_count * n, 256), 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };

    let mut timer = gpu.timer()?;
    let mut infer_ms = Vec::new();
    for run in 0..spec.warmup + spec.repetitions.max(1) {
        stream
            .memset_zeros(&mut *y_a)
            .context("clearing the activations")?;
        rows::scatter_rows(gpu, input, &mut y_a)?;
        timer.start(&stream)?;
        for (index, layer) in sparse.iter().enumerate() {
            let even = index.is_multiple_of(2);
            let (b, c) = if even {
                (&dense_a, &dense_b)
            } else {
                (&dense_b, &dense_a)
            };
            {
                let (workspace_ptr, _sync) = (*workspace).device_ptr(&stream);
                // SAFETY: descriptors point at live buffers of the right sizes; the workspace
                // holds at least the queried bytes.
                check(
                    unsafe {
                        sys::cusparseSpMM(
                            handle.0,
                            operation,
                            operation,
                            &alpha as *const f32 as *const c_void,
                            layer.descriptor,
                            b.0,
                            &beta as *const f32 as *const c_void,
                            c.0,
                            sys::cudaDataType::CUDA_R_32F,
                            algorithm,
                            workspace_ptr as *mut c_void,
                        )
                    },
                    "SpMM",
                )?;
            }
            let z = if even { &mut y_b } else { &mut y_a };
            let mut launch = stream.launch_builder(&epilogue);
            launch.arg(&mut **z).arg(&total).arg(&bias).arg(&upper);
            unsafe { launch.launch(epilogue_config) }.context("launching cusparse_bias_clip")?;
        }
        let final_y = if layers.len().is_multiple_of(2) {
            &y_a
        } else {
            &y_b
        };
        rows::row_nonzero_flags(gpu, final_y, rows_count, n, &mut row_flags)?;
        let ms = timer.stop(&stream)?;
        if run >= spec.warmup {
            infer_ms.push(ms);
        }
    }

    let final_y = if layers.len().is_multiple_of(2) {
        &y_a
    } else {
        &y_b
    };
    let details = vec![("algorithm".into(), "CUSPARSE_SPMM_ALG_DEFAULT".into())];
    Ok(GpuInference {
        details,
        ..rows::finish(gpu, &row_flags, final_y, n, spec, infer_ms, wall)?
    })
}
