//! The yardstick for trained networks: every layer as one dense cuBLAS SGEMM followed by one
//! fused bias-and-clip epilogue, the way a user with a dense-ish network would write it.
//!
//! `Z = Y·W` with the activations row-major (rows × `N_in`, as every method here keeps
//! them) and the weights densified once in `prepare` as `N_in × N_out` row-major (missing
//! entries are 0). Read column-major, the same buffers are `Yᵀ` (`N_in × rows`) and `Wᵀ`
//! (`N_out × N_in`), so each layer is one `cublasSgemm` computing `Zᵀ = Wᵀ·Yᵀ` (both
//! operands untransposed, `m = N_out`, `n = rows`, `k = N_in`) and no activation is ever
//! transposed. The epilogue, `dense_bias_clip` (`kernels-cu/dense.cu`), adds the bias (one
//! for every neuron, or one per output neuron), clips to `[0, U]` and, on the last layer,
//! flags the rows with a nonzero output.
//!
//! The products are fp32 as cuBLAS computes them without tensor cores: the handle's math
//! mode is `CUBLAS_PEDANTIC_MATH`. [`DenseOptions::tf32`] (`--dense-tf32`) allows TF32
//! tensor-op math instead; such a run is lossy and its details say so. cuBLAS is loaded at
//! run time ([`cublas_present`] is checked before its first call, so a missing library is an
//! error naming it, not a panic), and its workspace is set explicitly
//! ([`WORKSPACE_BYTES`]) so that the memory model ([`Dense::memory`]) is exact.
//!
//! Biases must be ≤ 0: `clip(Z + b)` equals the official structural rule (the bias only
//! where `Y·W` is structurally nonzero) only then, and a dense product does not know the
//! structure; the harness refuses a positive one.

use std::ffi::{c_int, c_void};

use spdnn_cuda::cudarc::cublas::sys;
use spdnn_cuda::cudarc::driver::{DevicePtr, DevicePtrMut};
use spdnn_cuda::memory::MemoryModel;
use spdnn_cuda::method::{self, DeviceRun, KernelMethod, LayerChain, MethodOptions, Probe};
use spdnn_cuda::rows::{self, GpuInference, PingPong, RunSpec};
use spdnn_cuda::{
    CudaError, DeviceBuffer, DriverResultExt, Gpu, Kernel, KernelDecl, KernelSource, PushKernelArg,
};
use spdnn_formats::{Csr, SparseMatrix};

/// `kernels-cu/dense.cu`.
pub const SOURCE: KernelSource =
    KernelSource::new("dense.cu", include_str!("../../../kernels-cu/dense.cu"));

/// `dense_bias_clip`: one thread per value of a layer's output, striding over the grid
/// ([`KernelDecl::config_for`] the rows × `N_out` values).
pub const BIAS_CLIP: KernelDecl = KernelDecl::new(&SOURCE, "dense_bias_clip", 256);

/// Every kernel this crate declares (`dense.cu`), checked against the source by the
/// kernel-table test.
pub const KERNELS: &[KernelDecl] = &[BIAS_CLIP];

/// Bytes of the cuBLAS workspace a run allocates and hands to its handle
/// (`cublasSetWorkspace`): the size cuBLAS recommends for Hopper, more than other
/// architectures use.
pub const WORKSPACE_BYTES: usize = 32 << 20;

/// Whether libcublas can be loaded (never panics).
pub fn cublas_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    unsafe { sys::is_culib_present() }
}

/// The error of a run without libcublas.
fn no_cublas() -> CudaError {
    CudaError::InvalidArgument(
        "dense: libcublas was not found on the library path (it ships with the CUDA toolkit, \
         e.g. /usr/local/cuda/lib64, or the pip wheel nvidia-cublas; add its folder to \
         LD_LIBRARY_PATH)"
            .into(),
    )
}

fn check(status: sys::cublasStatus_t, what: &str) -> Result<(), CudaError> {
    if status == sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(CudaError::InvalidArgument(format!(
            "cuBLAS {what} failed: {status:?}"
        )))
    }
}

/// The `dense` method's options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DenseOptions {
    /// Allow TF32 tensor-op math in the products (`CUBLAS_TF32_TENSOR_OP_MATH`): faster,
    /// and lossy (each product's inputs rounded to a 10-bit mantissa). Off by default: fp32
    /// in `CUBLAS_PEDANTIC_MATH`.
    pub tf32: bool,
}

impl MethodOptions for DenseOptions {}

impl DenseOptions {
    /// The cuBLAS math mode these options ask for.
    pub fn math_mode(&self) -> sys::cublasMath_t {
        if self.tf32 {
            sys::cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH
        } else {
            sys::cublasMath_t::CUBLAS_PEDANTIC_MATH
        }
    }
}

/// Floats of layer `w` densified, `N_in × N_out` (saturating: a layer that large does not
/// fit any device, and the memory model says so).
pub fn dense_floats(w: &Csr) -> usize {
    w.nrows().saturating_mul(w.ncols())
}

/// Floats of one activation buffer for batches of `rows` rows of the widest layer.
fn activation_floats(rows: usize, widest: usize) -> usize {
    rows.saturating_mul(widest)
}

/// `value` as a cuBLAS dimension, or an error naming `what`.
fn dimension(value: usize, what: &str) -> Result<c_int, CudaError> {
    c_int::try_from(value).map_err(|_| {
        CudaError::InvalidArgument(format!(
            "dense: {what} {value} exceed cuBLAS's 32-bit dimensions"
        ))
    })
}

/// The dense cuBLAS chain as a method of the registry.
pub struct Dense;

impl KernelMethod for Dense {
    const NAME: &'static str = "dense";
    const DESCRIPTION: &'static str =
        "yardstick for trained networks: dense cuBLAS SGEMM per layer (fp32) + fused epilogue";
    type Options = DenseOptions;
    const ACCEPTS_PER_NEURON_BIAS: bool = true;

    /// Exact: per row, two activation buffers of the widest layer and the category flag;
    /// per layer, its dense `N_in × N_out` floats and its per-neuron biases; fixed, the
    /// cuBLAS workspace. `prepare` allocates exactly these (with the same functions), `load`
    /// only the input upload the planner adds, `run` nothing. The handle's own few bytes are
    /// outside the accounting (the planner's reserve). Resident only.
    fn memory(chain: &LayerChain<'_>, _options: &DenseOptions) -> MemoryModel {
        let widest = spdnn_cuda::memory::widest(chain);
        MemoryModel {
            per_row: 2 * 4 * widest + 1,
            layers: chain.with_bias_bytes(
                chain
                    .layers
                    .iter()
                    .map(|w| dense_floats(w).saturating_mul(4))
                    .collect(),
            ),
            fixed: WORKSPACE_BYTES,
            streaming: false,
            exact: true,
            binary_input: None,
        }
    }

    fn prepare<'g>(
        gpu: &'g Gpu,
        chain: &LayerChain<'_>,
        rows_count: usize,
        options: &DenseOptions,
    ) -> Result<Box<dyn DeviceRun + 'g>, CudaError> {
        Ok(Box::new(DenseRun::prepare(
            gpu, chain, rows_count, options,
        )?))
    }
}

/// Runs the dense chain on `input` (rows × `N_0`) through `layers` (`N_{l-1} × N_l`) with
/// one `bias` (< 0) for every neuron and the bound `upper`.
pub fn infer(
    gpu: &Gpu,
    layers: &[Csr],
    input: &Csr,
    bias: f32,
    upper: f32,
    options: &DenseOptions,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    method::run::<Dense>(
        gpu,
        &LayerChain::new(layers, bias, upper),
        input,
        options,
        spec,
    )
}

/// Runs the dense chain with a bias per output neuron of every layer (`biases[l][k]`, each
/// ≤ 0: a positive one is refused).
pub fn infer_with_biases(
    gpu: &Gpu,
    layers: &[Csr],
    input: &Csr,
    biases: &[Vec<f32>],
    upper: f32,
    options: &DenseOptions,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    method::run::<Dense>(
        gpu,
        &LayerChain::with_biases(layers, biases, upper),
        input,
        options,
        spec,
    )
}

/// A cuBLAS handle (destroyed on drop).
struct Handle(sys::cublasHandle_t);

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: created by cublasCreate, destroyed once.
        unsafe { sys::cublasDestroy_v2(self.0) };
    }
}

impl Handle {
    /// A handle on `gpu`'s stream with `math`, using `workspace` (which must outlive it).
    fn new(
        gpu: &Gpu,
        math: sys::cublasMath_t,
        workspace: &mut DeviceBuffer<u8>,
    ) -> Result<Self, CudaError> {
        gpu.context()
            .bind_to_thread()
            .context("binding the context for cuBLAS")?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: creates a handle; checked below.
        check(unsafe { sys::cublasCreate_v2(&mut raw) }, "Create")?;
        let handle = Handle(raw);
        let stream = gpu.stream();
        // SAFETY: the stream (the GPU's) outlives the handle, which the run owns.
        check(
            unsafe { sys::cublasSetStream_v2(handle.0, stream.cu_stream() as sys::cudaStream_t) },
            "SetStream",
        )?;
        // SAFETY: a valid handle and math mode.
        check(
            unsafe { sys::cublasSetMathMode(handle.0, math) },
            "SetMathMode",
        )?;
        // After SetStream: setting the stream resets the workspace to cuBLAS's own pool.
        let bytes = workspace.bytes();
        let (pointer, _sync) = (**workspace).device_ptr_mut(stream);
        // SAFETY: the workspace holds `bytes` bytes and is dropped after the handle.
        check(
            unsafe { sys::cublasSetWorkspace_v2(handle.0, pointer as *mut c_void, bytes) },
            "SetWorkspace",
        )?;
        Ok(handle)
    }
}

/// Everything one dense run keeps (the handle first: destroyed before its workspace).
struct DenseRun<'g> {
    handle: Handle,
    /// The handle's workspace (`cublasSetWorkspace`): only cuBLAS reads it.
    _workspace: DeviceBuffer<u8>,
    /// Per layer, `W` as `N_in × N_out` row-major floats (column-major `Wᵀ`).
    weights: Vec<DeviceBuffer<f32>>,
    /// Per layer, a bias per output neuron (trained networks).
    biases: Option<Vec<DeviceBuffer<f32>>>,
    /// The activations: the current layer's input and its output, swapped after each layer.
    y: PingPong<DeviceBuffer<f32>>,
    row_flags: DeviceBuffer<u8>,
    epilogue: Kernel,
    gpu: &'g Gpu,
    /// `N_0, …, N_L`.
    widths: Vec<usize>,
    /// Rows per batch.
    rows: usize,
    /// Rows of the loaded batch.
    loaded: usize,
    bias: f32,
    upper: f32,
    options: DenseOptions,
}

impl<'g> DenseRun<'g> {
    fn prepare(
        gpu: &'g Gpu,
        chain: &LayerChain<'_>,
        rows: usize,
        options: &DenseOptions,
    ) -> Result<Self, CudaError> {
        let layers = chain.layers;
        let widths = rows::check_widths(layers, chain.bias, chain.upper)?;
        let widest = widths.iter().copied().max().unwrap_or(0);
        dimension(rows, "rows per batch")?;
        dimension(widest, "layer widths of")?;
        if !cublas_present() {
            return Err(no_cublas());
        }
        gpu.compile_ahead([&BIAS_CLIP]);
        // Device memory first, in the model's amounts: a chain too large for the device is
        // refused by an allocation (which the planner sees) before any host memory is
        // spent densifying it.
        let y_a = gpu.alloc_zeros::<f32>(activation_floats(rows, widest))?;
        let y_b = gpu.alloc_zeros::<f32>(activation_floats(rows, widest))?;
        let row_flags = gpu.alloc_zeros::<u8>(rows)?;
        let mut workspace = gpu.alloc_zeros::<u8>(WORKSPACE_BYTES)?;
        let mut weights = layers
            .iter()
            .map(|w| gpu.alloc_zeros::<f32>(dense_floats(w)))
            .collect::<Result<Vec<_>, _>>()?;
        let biases = match chain.biases {
            Some(all) => Some(
                all.iter()
                    .map(|b| gpu.upload(b))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            None => None,
        };
        let largest = layers.iter().map(dense_floats).max().unwrap_or(0);
        let mut host: Vec<f32> = Vec::new();
        host.try_reserve_exact(largest).map_err(|_| {
            CudaError::InvalidArgument(format!(
                "dense: no host memory to densify a layer of {largest} floats"
            ))
        })?;
        for (w, device) in layers.iter().zip(&mut weights) {
            densify_into(w, &mut host);
            gpu.upload_into(&host, device)?;
        }
        let handle = Handle::new(gpu, options.math_mode(), &mut workspace)?;
        Ok(Self {
            handle,
            _workspace: workspace,
            weights,
            biases,
            y: PingPong::new(y_a, y_b),
            row_flags,
            epilogue: gpu.kernel(&BIAS_CLIP)?,
            gpu,
            widths,
            rows,
            loaded: 0,
            bias: chain.bias,
            upper: chain.upper,
            options: *options,
        })
    }

    /// The last layer's width.
    fn output_width(&self) -> usize {
        self.widths.last().copied().unwrap_or(0)
    }

    /// `Zᵀ = Wᵀ·Yᵀ` of layer `l` over the loaded rows, then its epilogue (with the row
    /// flags on the last layer).
    fn layer(&mut self, l: usize) -> Result<(), CudaError> {
        let (n_in, n_out) = (self.widths[l], self.widths[l + 1]);
        let last = l + 1 == self.weights.len();
        let (m, n, k) = (
            dimension(n_out, "layer width")?,
            dimension(self.loaded, "rows")?,
            dimension(n_in, "layer width")?,
        );
        let stream = self.gpu.stream().clone();
        let (y, z) = self.y.split();
        {
            let (w_ptr, _w) = (*self.weights[l]).device_ptr(&stream);
            let (y_ptr, _y) = (**y).device_ptr(&stream);
            let (z_ptr, _z) = (**z).device_ptr_mut(&stream);
            let (alpha, beta) = (1.0f32, 0.0f32);
            // SAFETY: W holds n_in·n_out floats (column-major n_out × n_in, ld n_out), Y at
            // least loaded·n_in (n_in × loaded, ld n_in), Z at least loaded·n_out (ld n_out);
            // all on the handle's stream.
            check(
                unsafe {
                    sys::cublasSgemm_v2(
                        self.handle.0,
                        sys::cublasOperation_t::CUBLAS_OP_N,
                        sys::cublasOperation_t::CUBLAS_OP_N,
                        m,
                        n,
                        k,
                        &alpha,
                        w_ptr as *const f32,
                        m,
                        y_ptr as *const f32,
                        k,
                        &beta,
                        z_ptr as *mut f32,
                        m,
                    )
                },
                "Sgemm",
            )?;
        }
        if last {
            rows::clear_row_flags(self.gpu, &mut self.row_flags)?;
        }
        let values = self.loaded * n_out;
        let (total, n_out_u32) = (values as u64, n_out as u32);
        let null: u64 = 0;
        let mut launch = stream.launch_builder(&self.epilogue);
        launch
            .arg(&mut **z)
            .arg(&total)
            .arg(&n_out_u32)
            .arg(&self.bias);
        match &self.biases {
            Some(biases) => launch.arg(&*biases[l]),
            None => launch.arg(&null),
        };
        launch.arg(&self.upper);
        if last {
            launch.arg(&mut *self.row_flags);
        } else {
            launch.arg(&null);
        }
        let config = self.epilogue.config_for(values)?;
        // SAFETY: the arguments follow dense_bias_clip's parameters; z holds `values`
        // floats, the biases n_out, the flags a byte per row.
        unsafe { launch.launch(config) }.context("launching dense_bias_clip")?;
        Ok(())
    }
}

/// Writes `w` as `N_in × N_out` row-major floats into `host` (resized; missing entries 0).
fn densify_into(w: &Csr, host: &mut Vec<f32>) {
    let n_out = w.ncols();
    host.clear();
    host.resize(dense_floats(w), 0.0);
    let offsets = w.row_offsets();
    for j in 0..w.nrows() {
        let (start, end) = (offsets[j] as usize, offsets[j + 1] as usize);
        let row = &mut host[j * n_out..(j + 1) * n_out];
        for (&k, &v) in w.col_indices()[start..end]
            .iter()
            .zip(&w.values()[start..end])
        {
            row[k as usize] = v;
        }
    }
}

impl DeviceRun for DenseRun<'_> {
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
        self.loaded = input.nrows();
        self.y.reset();
        let y = self.y.current_mut();
        self.gpu
            .stream()
            .memset_zeros(&mut **y)
            .context("clearing the activations")?;
        rows::scatter_rows(self.gpu, input, y)
    }

    fn run(&mut self, probe: &mut Probe) -> Result<(), CudaError> {
        self.y.reset();
        if self.loaded == 0 {
            return rows::clear_row_flags(self.gpu, &mut self.row_flags);
        }
        for l in 0..self.weights.len() {
            self.layer(l)?;
            self.y.swap();
            probe.layer("layers")?;
        }
        Ok(())
    }

    fn row_flags(&mut self) -> Result<Vec<u8>, CudaError> {
        rows::download_row_flags(self.gpu, &self.row_flags, self.loaded)
    }

    fn output(&mut self) -> Result<Vec<f32>, CudaError> {
        let flags = self.row_flags()?;
        rows::final_output(self.gpu, self.y.current(), self.output_width(), &flags)
    }

    fn details(&self) -> Vec<(String, String)> {
        let mut details = vec![
            (
                "math".into(),
                if self.options.tf32 {
                    "tf32 tensor ops (CUBLAS_TF32_TENSOR_OP_MATH)"
                } else {
                    "fp32 (CUBLAS_PEDANTIC_MATH)"
                }
                .into(),
            ),
            ("workspace_bytes".into(), WORKSPACE_BYTES.to_string()),
            (
                "dense_weight_bytes".into(),
                self.weights
                    .iter()
                    .map(|w| w.bytes())
                    .sum::<usize>()
                    .to_string(),
            ),
        ];
        if self.options.tf32 {
            details.push((
                "lossy".into(),
                "yes: --dense-tf32 rounds each product's inputs to TF32 (10-bit mantissa); the \
                 values and categories may differ from the reference's"
                    .into(),
            ));
        }
        details
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn densified_layers_are_row_major_in_by_out_with_zeros_between() {
        let w = Csr::from_triplets(3, 4, &[(0, 1, 2.0), (0, 3, -1.0), (2, 0, 0.5)]).unwrap();
        let mut host = vec![9.0; 20];
        densify_into(&w, &mut host);
        assert_eq!(
            host,
            vec![
                0.0, 2.0, 0.0, -1.0, //
                0.0, 0.0, 0.0, 0.0, //
                0.5, 0.0, 0.0, 0.0
            ]
        );
        assert_eq!(dense_floats(&w), 12);
    }

    #[test]
    fn the_product_of_the_column_major_view_is_y_times_w() {
        // What one cublasSgemm(N, N, m = N_out, n = rows, k = N_in, W, lda = N_out, Y,
        // ldb = N_in, Z, ldc = N_out) computes, written out over the very buffers the run
        // hands it: Z[c + r·ldc] = Σ_j W[c + j·lda] · Y[j + r·ldb].
        let w = Csr::from_triplets(3, 2, &[(0, 0, 1.0), (1, 1, 2.0), (2, 0, -3.0)]).unwrap();
        let mut weights = Vec::new();
        densify_into(&w, &mut weights);
        let y = [1.0f32, 10.0, 100.0, 2.0, 20.0, 200.0]; // rows × N_in = 2 × 3, row-major
        let (m, n, k) = (2, 2, 3);
        let mut z = [0.0f32; 4];
        for r in 0..n {
            for c in 0..m {
                z[c + r * m] = (0..k).map(|j| weights[c + j * m] * y[j + r * k]).sum();
            }
        }
        // Row-major rows × N_out: Y·W.
        assert_eq!(z, [1.0 - 300.0, 20.0, 2.0 - 600.0, 40.0]);
    }

    #[test]
    fn the_model_counts_dense_layers_biases_buffers_and_the_workspace() {
        let layers = vec![
            Csr::from_triplets(784, 128, &[(0, 0, 1.0)]).unwrap(),
            Csr::from_triplets(128, 10, &[(5, 9, 1.0)]).unwrap(),
        ];
        let one = Dense::memory(
            &LayerChain::new(&layers, -0.3, 32.0),
            &DenseOptions::default(),
        );
        assert_eq!(one.per_row, 2 * 4 * 784 + 1);
        assert_eq!(one.layers, vec![4 * 784 * 128, 4 * 128 * 10]);
        assert_eq!(one.fixed, WORKSPACE_BYTES);
        assert!(one.exact && !one.streaming);
        let biases = vec![vec![-0.1; 128], vec![0.0; 10]];
        let per_neuron = Dense::memory(
            &LayerChain::with_biases(&layers, &biases, 1.0),
            &DenseOptions { tf32: true },
        );
        assert_eq!(
            per_neuron.layers,
            vec![4 * 784 * 128 + 4 * 128, 4 * 128 * 10 + 4 * 10]
        );
    }

    #[test]
    fn the_math_mode_is_pedantic_unless_tf32_is_asked_for() {
        assert_eq!(
            DenseOptions::default().math_mode(),
            sys::cublasMath_t::CUBLAS_PEDANTIC_MATH
        );
        assert_eq!(
            DenseOptions { tf32: true }.math_mode(),
            sys::cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH
        );
        assert!(DenseOptions::default().validate().is_ok());
    }

    #[test]
    fn dimensions_beyond_32_bits_are_errors() {
        assert_eq!(dimension(7, "rows").unwrap(), 7);
        let error = dimension(1 << 31, "rows").unwrap_err().to_string();
        assert!(error.contains("32-bit"), "{error}");
    }
}
