//! The yardstick: every layer as cuSPARSE's generic SpMM followed by a bias-and-clip
//! kernel, the way a user without this project would write it.
//!
//! `Z = Y·W` is computed as `Zᵀ = Wᵀ·Yᵀ`: `Wᵀ` in CSR (row = output neuron), and the
//! row-major `Y` (rows × N) is the column-major `Yᵀ` (N × rows, leading dimension N), so
//! no activation is ever transposed. cuSPARSE is reached through cudarc's `sys` level
//! (it has no safe API); every handle and descriptor is released on drop.
//!
//! Per-neuron biases (trained networks) take the epilogue `cusparse_bias_clip_neurons`. A
//! layer with a positive bias needs the structural rule (the bias only where `Y·W` is
//! structurally nonzero): its pattern (every stored weight as 1) is multiplied too, `S =
//! Y·pattern(W)`, which for `Y ≥ 0` is positive exactly at the structural nonzeros, and
//! `cusparse_bias_clip_structural` adds the bias only there. Activations after a layer are
//! `≥ 0`; an input with a negative value meeting such a first layer is refused.
//!
//! Any chain of widths runs (`N_{l-1} × N_l` layers, as compression makes them): layer `l`
//! reads `Yᵀ` as `N_{l-1} × rows` and writes `N_l × rows`, each over a buffer of the widest
//! rows, through one dense descriptor per (buffer, width) pair (two in a square network).

use std::ffi::c_void;

use spdnn_cuda::cudarc::cusparse::sys;
use spdnn_cuda::cudarc::driver::{DevicePtr, DevicePtrMut};
use spdnn_cuda::memory::MemoryModel;
use spdnn_cuda::method::{self, DeviceRun, KernelMethod, LayerChain, NoOptions, Probe};
use spdnn_cuda::rows::{self, GpuInference, RunSpec};
use spdnn_cuda::{
    CudaError, DeviceBuffer, DriverResultExt, Gpu, Kernel, KernelDecl, KernelSource, PushKernelArg,
};
use spdnn_formats::{Csr, SparseMatrix};

/// `kernels-cu/cusparse_epilogue.cu`.
pub const EPILOGUE: KernelSource = KernelSource::new(
    "cusparse_epilogue.cu",
    include_str!("../../../kernels-cu/cusparse_epilogue.cu"),
);

/// `cusparse_bias_clip`: one thread per value, striding over the grid
/// ([`KernelDecl::config_for`] the rows × `N_out` values of a layer).
pub const BIAS_CLIP: KernelDecl = KernelDecl::new(&EPILOGUE, "cusparse_bias_clip", 256);

/// `cusparse_bias_clip_neurons`: as [`BIAS_CLIP`], a bias per output neuron.
pub const BIAS_CLIP_NEURONS: KernelDecl =
    KernelDecl::new(&EPILOGUE, "cusparse_bias_clip_neurons", 256);

/// `cusparse_bias_clip_structural`: as [`BIAS_CLIP_NEURONS`], the bias only where the
/// structural product is positive.
pub const BIAS_CLIP_STRUCTURAL: KernelDecl =
    KernelDecl::new(&EPILOGUE, "cusparse_bias_clip_structural", 256);

/// The epilogues a run compiles ahead (every one it loads).
pub const EPILOGUES: [&KernelDecl; 3] = [&BIAS_CLIP, &BIAS_CLIP_NEURONS, &BIAS_CLIP_STRUCTURAL];

/// Every kernel this crate declares (`cusparse_epilogue.cu`), checked against the source by
/// the kernel-table test.
pub const KERNELS: &[KernelDecl] = &[BIAS_CLIP, BIAS_CLIP_NEURONS, BIAS_CLIP_STRUCTURAL];

/// The bytes the memory model holds for SpMM's workspace, known only once the descriptors
/// exist (measured: 519 bytes for 1024-wide layers on an H100).
pub const SPMM_WORKSPACE_ALLOWANCE: usize = 64 << 10;

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

/// Device bytes of [`sparse_layer`]`(w)`: `Wᵀ`'s offsets, columns and values (one column
/// and value when it is empty).
fn sparse_layer_bytes(w: &Csr) -> usize {
    4 * (w.ncols() + 1) + 8 * w.nnz().max(1)
}

/// Whether layer `l` of `chain` has a positive per-neuron bias (its pattern then runs too).
fn positive_bias(chain: &LayerChain<'_>, l: usize) -> bool {
    chain
        .layer_biases(l)
        .is_some_and(|b| b.iter().any(|&v| v > 0.0))
}

/// Device bytes of the buffers `prepare` sizes by the batch of `rows` rows of at most
/// `widest` values: the two activation buffers, the structural product's buffer (one float
/// without a positive bias) and the category flags.
fn batch_bytes(rows: usize, widest: usize, any_positive: bool) -> usize {
    2 * 4 * rows * widest + 4 * structural_floats(rows, widest, any_positive) + rows
}

/// Floats of the structural product's buffer: a batch's activations when a layer has a
/// positive bias, else one.
fn structural_floats(rows: usize, widest: usize, any_positive: bool) -> usize {
    if any_positive { rows * widest } else { 1 }
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

/// The cuSPARSE baseline as a method of the registry.
pub struct Cusparse;

impl KernelMethod for Cusparse {
    const NAME: &'static str = "cusparse";
    const DESCRIPTION: &'static str = "baseline: cuSPARSE SpMM per layer + bias-and-clip kernel";
    type Options = NoOptions;
    const ACCEPTS_PER_NEURON_BIAS: bool = true;
    const ACCEPTS_POSITIVE_BIAS: bool = true;

    /// Per row: two activation buffers of the widest rows and the category flag (and, with
    /// a positive per-neuron bias somewhere, the structural product's buffer); per layer:
    /// `Wᵀ` in 32-bit CSR (one column and value when empty), its per-neuron biases, and for
    /// a layer with a positive bias its pattern too ([`sparse_layer_bytes`]); fixed: the
    /// unused structural buffer's one float and SpMM's workspace. The workspace is what
    /// `cusparseSpMM_bufferSize` asks for once the descriptors exist (`prepare` queries it
    /// and reports it as `spmm_workspace_bytes`): 519 bytes on an H100 for 1024-wide layers
    /// (2026-11-26), so the model holds [`SPMM_WORKSPACE_ALLOWANCE`] for it, a bound.
    /// cuSPARSE's handle keeps memory of its own outside the budget's accounting.
    fn memory(chain: &LayerChain<'_>, _options: &NoOptions) -> MemoryModel {
        let widest = spdnn_cuda::memory::widest(chain);
        let any_positive = (0..chain.layers.len()).any(|l| positive_bias(chain, l));
        let (per_row, fixed) =
            spdnn_cuda::memory::linear(|rows| batch_bytes(rows, widest, any_positive));
        MemoryModel {
            per_row,
            layers: chain
                .layers
                .iter()
                .enumerate()
                .map(|(l, w)| {
                    let matrix = sparse_layer_bytes(w);
                    matrix + chain.bias_bytes(l) + if positive_bias(chain, l) { matrix } else { 0 }
                })
                .collect(),
            fixed: fixed + SPMM_WORKSPACE_ALLOWANCE,
            streaming: false,
            exact: false,
            binary_input: None,
        }
    }

    fn prepare<'g>(
        gpu: &'g Gpu,
        chain: &LayerChain<'_>,
        rows_count: usize,
        _options: &NoOptions,
    ) -> Result<Box<dyn DeviceRun + 'g>, CudaError> {
        let layers = chain.layers;
        let widths = rows::check_widths(layers, chain.bias, chain.upper)?;
        let widest = widths.iter().copied().max().unwrap_or(0);
        // The epilogues compile on worker threads while cuSPARSE is set up.
        gpu.compile_ahead(EPILOGUES);
        if layers.iter().any(|w| w.nnz() > i32::MAX as usize) {
            return Err(CudaError::InvalidArgument(
                "a layer has more entries than 32-bit cuSPARSE indices allow".into(),
            ));
        }
        if !cusparse_present() {
            return Err(CudaError::InvalidArgument(
                "libcusparse was not found on the library path (it ships with the CUDA toolkit)"
                    .into(),
            ));
        }
        let stream = gpu.stream().clone();
        let mut raw = std::ptr::null_mut();
        // SAFETY: creates a handle; checked below.
        check(unsafe { sys::cusparseCreate(&mut raw) }, "Create")?;
        let handle = Handle(raw);
        // SAFETY: the stream (the GPU's) outlives the handle, which the run owns.
        check(
            unsafe { sys::cusparseSetStream(handle.0, stream.cu_stream() as sys::cudaStream_t) },
            "SetStream",
        )?;

        let sparse = layers
            .iter()
            .map(|w| sparse_layer(gpu, w))
            .collect::<Result<Vec<_>, _>>()?;
        let mut y_a = gpu.alloc_zeros::<f32>(rows_count * widest)?;
        let mut y_b = gpu.alloc_zeros::<f32>(rows_count * widest)?;
        let plan = DensePlan::new(&widths);
        let mut dense_matrices = Vec::with_capacity(plan.views.len());
        for &(buffer, width) in &plan.views {
            let y = if buffer == 0 { &mut y_a } else { &mut y_b };
            dense_matrices.push(dense(gpu, y, width, rows_count)?);
        }
        // Per-neuron biases, and for layers with a positive one the pattern and the
        // structural product's buffer (one descriptor per such layer).
        let biases = match chain.biases {
            Some(all) => Some(
                all.iter()
                    .map(|b| gpu.upload(b))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            None => None,
        };
        let positive: Vec<bool> = (0..layers.len()).map(|l| positive_bias(chain, l)).collect();
        let mut s_buffer = gpu.alloc_zeros::<f32>(structural_floats(
            rows_count,
            widest,
            positive.contains(&true),
        ))?;
        let mut structural = Vec::with_capacity(layers.len());
        for (l, w) in layers.iter().enumerate() {
            structural.push(if positive[l] {
                let ones = Csr::from_parts(
                    w.nrows(),
                    w.ncols(),
                    w.row_offsets().to_vec(),
                    w.col_indices().to_vec(),
                    vec![1.0; w.nnz()],
                )
                .map_err(|e| CudaError::InvalidArgument(format!("layer {}: {e}", l + 1)))?;
                Some((
                    sparse_layer(gpu, &ones)?,
                    dense(gpu, &mut s_buffer, w.ncols(), rows_count)?,
                ))
            } else {
                None
            });
        }
        let mut workspace_bytes = 0usize;
        let products = sparse
            .iter()
            .zip(&plan.layers)
            .map(|(layer, &(input, output))| (layer.descriptor, input, dense_matrices[output].0));
        let pattern_products = structural
            .iter()
            .zip(&plan.layers)
            .filter_map(|(s, &(input, _))| s.as_ref().map(|(p, d)| (p.descriptor, input, d.0)));
        for (descriptor, input, output) in products.chain(pattern_products) {
            let mut bytes = 0usize;
            // SAFETY: descriptors are valid; only queries a size.
            check(
                unsafe {
                    sys::cusparseSpMM_bufferSize(
                        handle.0,
                        OPERATION,
                        OPERATION,
                        &ALPHA as *const f32 as *const c_void,
                        descriptor,
                        dense_matrices[input].0,
                        &BETA as *const f32 as *const c_void,
                        output,
                        sys::cudaDataType::CUDA_R_32F,
                        ALGORITHM,
                        &mut bytes,
                    )
                },
                "SpMM_bufferSize",
            )?;
            workspace_bytes = workspace_bytes.max(bytes);
        }
        Ok(Box::new(CusparseRun {
            structural,
            dense: dense_matrices,
            plan: plan.layers,
            sparse,
            handle,
            workspace: gpu.alloc_zeros::<u8>(workspace_bytes.max(1))?,
            workspace_bytes,
            epilogue: gpu.kernel(&BIAS_CLIP)?,
            epilogue_neurons: gpu.kernel(&BIAS_CLIP_NEURONS)?,
            epilogue_structural: gpu.kernel(&BIAS_CLIP_STRUCTURAL)?,
            biases,
            s: s_buffer,
            y: (y_a, y_b),
            row_flags: gpu.alloc_zeros::<u8>(rows_count)?,
            gpu,
            widths,
            rows: rows_count,
            loaded: 0,
            bias: chain.bias,
            upper: chain.upper,
        }))
    }
}

/// Runs the cuSPARSE baseline on `input` (rows × `N_0`) through `layers` (`N_{l-1} × N_l`).
pub fn infer(
    gpu: &Gpu,
    layers: &[Csr],
    input: &Csr,
    bias: f32,
    upper: f32,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    method::run::<Cusparse>(
        gpu,
        &LayerChain::new(layers, bias, upper),
        input,
        &NoOptions,
        spec,
    )
}

const OPERATION: sys::cusparseOperation_t =
    sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;
const ALGORITHM: sys::cusparseSpMMAlg_t = sys::cusparseSpMMAlg_t::CUSPARSE_SPMM_ALG_DEFAULT;
const ALPHA: f32 = 1.0;
const BETA: f32 = 0.0;

/// The dense descriptors a chain needs: layer `l` reads buffer A (even `l`) or B as
/// `N_l × rows` and writes the other as `N_{l+1} × rows` (0-based `l`, widths `N_0 … N_L`);
/// one descriptor per distinct (buffer, width), so a square network has two.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DensePlan {
    /// (buffer: 0 = A, 1 = B; rows of this many values), one per descriptor.
    views: Vec<(usize, usize)>,
    /// Per layer, the descriptors (indices into `views`) of its input and output.
    layers: Vec<(usize, usize)>,
}

impl DensePlan {
    fn new(widths: &[usize]) -> Self {
        let mut views: Vec<(usize, usize)> = Vec::new();
        let mut index = |view: (usize, usize)| match views.iter().position(|&v| v == view) {
            Some(i) => i,
            None => {
                views.push(view);
                views.len() - 1
            }
        };
        let layers = widths
            .windows(2)
            .enumerate()
            .map(|(l, pair)| {
                let (read, write) = if l % 2 == 0 { (0, 1) } else { (1, 0) };
                (index((read, pair[0])), index((write, pair[1])))
            })
            .collect();
        Self { views, layers }
    }
}

/// Everything one cuSPARSE run keeps (descriptors first: dropped before their buffers).
struct CusparseRun<'g> {
    /// Per layer with a positive bias: its pattern and the structural product's descriptor.
    structural: Vec<Option<(SparseLayer, DenseMatrix)>>,
    /// Dense descriptors over activations A and B ([`DensePlan::views`]).
    dense: Vec<DenseMatrix>,
    /// Per layer, its input and output descriptors ([`DensePlan::layers`]).
    plan: Vec<(usize, usize)>,
    sparse: Vec<SparseLayer>,
    handle: Handle,
    workspace: DeviceBuffer<u8>,
    /// What `cusparseSpMM_bufferSize` asked for (the most over the layers).
    workspace_bytes: usize,
    epilogue: Kernel,
    epilogue_neurons: Kernel,
    epilogue_structural: Kernel,
    /// Per-neuron biases of every layer (trained networks).
    biases: Option<Vec<DeviceBuffer<f32>>>,
    /// The structural product `S = Y·pattern(W)` of a layer with a positive bias.
    s: DeviceBuffer<f32>,
    /// Activations A and B: layer l reads A (even l) or B.
    y: (DeviceBuffer<f32>, DeviceBuffer<f32>),
    row_flags: DeviceBuffer<u8>,
    gpu: &'g Gpu,
    /// `N_0, …, N_L`.
    widths: Vec<usize>,
    /// Rows per batch.
    rows: usize,
    /// Rows of the loaded batch.
    loaded: usize,
    bias: f32,
    upper: f32,
}

impl CusparseRun<'_> {
    /// The last layer's output width.
    fn output_width(&self) -> usize {
        self.widths.last().copied().unwrap_or(0)
    }

    /// The activations after the last layer.
    fn final_y(&self) -> &DeviceBuffer<f32> {
        if self.sparse.len().is_multiple_of(2) {
            &self.y.0
        } else {
            &self.y.1
        }
    }
}

impl DeviceRun for CusparseRun<'_> {
    fn load(&mut self, input: &Csr) -> Result<(), CudaError> {
        if input.nrows() > self.rows || input.ncols() != self.widths[0] {
            return Err(CudaError::InvalidArgument(format!(
                "{} rows of {} values do not fit a batch of {} rows of {}",
                input.nrows(),
                input.ncols(),
                self.rows,
                self.widths[0]
            )));
        }
        if self.structural.first().is_some_and(Option::is_some)
            && let Some(at) = input.values().iter().position(|&v| v < 0.0)
        {
            return Err(CudaError::InvalidArgument(format!(
                "cusparse: input value {} (entry {at}) is negative, and layer 1 has a positive \
                 bias: the structural rule is computed as Y·pattern(W) > 0, which needs Y ≥ 0",
                input.values()[at]
            )));
        }
        self.loaded = input.nrows();
        self.gpu
            .stream()
            .memset_zeros(&mut *self.y.0)
            .context("clearing the activations")?;
        rows::scatter_rows(self.gpu, input, &mut self.y.0)
    }

    fn run(&mut self, probe: &mut Probe) -> Result<(), CudaError> {
        let stream = self.gpu.stream().clone();
        for (index, (layer, &(input, output))) in self.sparse.iter().zip(&self.plan).enumerate() {
            let even = index.is_multiple_of(2);
            let (b, c) = (&self.dense[input], &self.dense[output]);
            let values = self.rows * self.widths[index + 1];
            let (total, epilogue_config) = (values as u64, self.epilogue.config_for(values)?);
            let (workspace_ptr, _sync) = (*self.workspace).device_ptr(&stream);
            let spmm = |a: sys::cusparseSpMatDescr_t, c: sys::cusparseDnMatDescr_t| {
                // SAFETY: descriptors point at live buffers of the right sizes; the workspace
                // holds at least the queried bytes.
                check(
                    unsafe {
                        sys::cusparseSpMM(
                            self.handle.0,
                            OPERATION,
                            OPERATION,
                            &ALPHA as *const f32 as *const c_void,
                            a,
                            b.0,
                            &BETA as *const f32 as *const c_void,
                            c,
                            sys::cudaDataType::CUDA_R_32F,
                            ALGORITHM,
                            workspace_ptr as *mut c_void,
                        )
                    },
                    "SpMM",
                )
            };
            spmm(layer.descriptor, c.0)?;
            if let Some((pattern, s)) = &self.structural[index] {
                spmm(pattern.descriptor, s.0)?;
            }
            drop(_sync);
            let z = if even { &mut self.y.1 } else { &mut self.y.0 };
            let n_out = self.widths[index + 1] as u32;
            match (&self.biases, &self.structural[index]) {
                (None, _) => {
                    let mut launch = stream.launch_builder(&self.epilogue);
                    launch
                        .arg(&mut **z)
                        .arg(&total)
                        .arg(&self.bias)
                        .arg(&self.upper);
                    unsafe { launch.launch(epilogue_config) }
                        .context("launching cusparse_bias_clip")?;
                }
                (Some(biases), None) => {
                    let mut launch = stream.launch_builder(&self.epilogue_neurons);
                    launch
                        .arg(&mut **z)
                        .arg(&total)
                        .arg(&n_out)
                        .arg(&*biases[index])
                        .arg(&self.upper);
                    unsafe { launch.launch(epilogue_config) }
                        .context("launching cusparse_bias_clip_neurons")?;
                }
                (Some(biases), Some(_)) => {
                    let mut launch = stream.launch_builder(&self.epilogue_structural);
                    launch
                        .arg(&mut **z)
                        .arg(&*self.s)
                        .arg(&total)
                        .arg(&n_out)
                        .arg(&*biases[index])
                        .arg(&self.upper);
                    unsafe { launch.launch(epilogue_config) }
                        .context("launching cusparse_bias_clip_structural")?;
                }
            }
            probe.layer("layers")?;
        }
        let final_y = if self.sparse.len().is_multiple_of(2) {
            &self.y.0
        } else {
            &self.y.1
        };
        let n = self.output_width();
        rows::row_nonzero_flags(self.gpu, final_y, self.rows, n, &mut self.row_flags)
    }

    fn row_flags(&mut self) -> Result<Vec<u8>, CudaError> {
        rows::download_row_flags(self.gpu, &self.row_flags, self.loaded)
    }

    fn output(&mut self) -> Result<Vec<f32>, CudaError> {
        let flags = self.row_flags()?;
        rows::final_output(self.gpu, self.final_y(), self.output_width(), &flags)
    }

    fn details(&self) -> Vec<(String, String)> {
        vec![
            ("algorithm".into(), "CUSPARSE_SPMM_ALG_DEFAULT".into()),
            (
                "spmm_workspace_bytes".into(),
                self.workspace_bytes.to_string(),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_square_chain_needs_two_descriptors() {
        let plan = DensePlan::new(&[64; 6]);
        assert_eq!(plan.views, vec![(0, 64), (1, 64)]);
        assert_eq!(plan.layers, vec![(0, 1), (1, 0), (0, 1), (1, 0), (0, 1)]);
    }

    #[test]
    fn each_layer_reads_and_writes_its_own_widths() {
        let widths = [7, 3, 10, 10, 3, 1];
        let plan = DensePlan::new(&widths);
        for (l, &(input, output)) in plan.layers.iter().enumerate() {
            let (read, write) = if l % 2 == 0 { (0, 1) } else { (1, 0) };
            assert_eq!(plan.views[input], (read, widths[l]), "layer {l} input");
            assert_eq!(
                plan.views[output],
                (write, widths[l + 1]),
                "layer {l} output"
            );
        }
        // Distinct views only: (A,7) (B,3) (A,10) (B,10) (A,3) (B,1).
        assert_eq!(plan.views.len(), 6);
        let again = DensePlan::new(&[4, 2, 4, 2, 4]);
        assert_eq!(again.views, vec![(0, 4), (1, 2)]);
    }
}
