//! Trains the sparse MNIST networks of the SNICIT paper (§4.2, Table 4) on the CPU with
//! candle, and writes them as `.safetensors` in the project's naming convention
//! (`spdnn_sdgc::trained`).
//!
//! A network is a dense `784 × N` layer, `l` sparse `N × N` layers whose masks are drawn
//! once at the start (each weight kept with probability `density`) and never change, and a
//! dense `N × 10` layer. Every layer, the last one included, is `min(max(Y·W + b, 0), U)`
//! with `U = 1`; the class is the index of the largest clipped score (the lowest among
//! equal ones), so the function trained is exactly the one the engine runs.
//!
//! Choices that make the trained networks run everywhere, exactly:
//!
//! - **Biases stay ≤ 0** (projected after every step). With `b ≤ 0` the challenge's
//!   structural rule (the bias only where `Y·W` is structurally nonzero) equals plain
//!   `ReLU(Y·W + b)`, so training and the engine compute the same function, and the GPU
//!   methods that take per-neuron biases but not the structural rule for positive ones
//!   run these networks.
//! - **The loss sees the clipped scores**: cross-entropy of `T · clip(Z + b)` (`T` = 10),
//!   so training pushes the right class to the bound and the others to 0 instead of
//!   growing logits that the clip would tie.
//!
//! Everything random (masks, initial weights, the order of the images) comes from ChaCha8
//! seeded with the run's seed; candle's CPU kernels sum in an order that can depend on the
//! number of threads, so a run is reproducible on one machine (same thread count).

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use candle_core::backprop::GradStore;
use candle_core::{DType, Device, Tensor, Var};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use spdnn_formats::Csr;
use spdnn_sdgc::Network;
use spdnn_sdgc::images::LabelledImages;

/// Pixels of an MNIST image.
pub const INPUTS: usize = 784;
/// Classes (digits).
pub const CLASSES: usize = 10;
/// The upper bound of every layer (the paper's ReLU bounded at 1).
pub const UPPER_BOUND: f32 = 1.0;
/// Slope of the training gradient where the clip is flat (the values are not changed).
pub const LEAK: f64 = 0.05;
/// Scale of the clipped scores fed to the cross-entropy.
pub const SCORE_SCALE: f64 = 10.0;

/// The shape and training recipe of one network.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NetSpec {
    /// `A`, `B`, `C` (Table 4's IDs).
    pub name: String,
    /// Neurons of the sparse layers.
    pub neurons: usize,
    /// Sparse `N × N` layers (`l`).
    pub sparse_layers: usize,
    /// Share of kept weights in each sparse layer.
    pub density: f64,
    /// Passes over the 60000 training images.
    pub epochs: usize,
    /// Images per step.
    pub batch: usize,
    /// Adam's peak learning rate.
    pub learning_rate: f64,
    /// How the learning rate moves over the run.
    pub schedule: Schedule,
    /// Largest global L2 norm of the gradient (all weights and biases together); a
    /// larger gradient is scaled down to it before Adam's step. `None`: no clipping.
    pub clip_norm: Option<f64>,
    /// Seed of masks, initial weights and image order.
    pub seed: u64,
}

/// How the learning rate moves over a run of `steps` optimizer steps.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Schedule {
    /// The peak rate at every step.
    Constant,
    /// A linear warm-up from `peak / w` to `peak` over the first `w = ⌈warmup · steps⌉`
    /// steps, then a cosine decay from `peak` towards 0 at the end of the run.
    WarmupCosine {
        /// Share of the steps spent warming up, in `[0, 1)`.
        warmup: f64,
    },
}

impl Schedule {
    /// The learning rate of step `step` (0-based) of `steps`, with peak rate `peak`.
    pub fn rate(&self, peak: f64, step: usize, steps: usize) -> f64 {
        match *self {
            Self::Constant => peak,
            Self::WarmupCosine { warmup } => {
                let warm = ((warmup * steps as f64).ceil() as usize).min(steps);
                if step < warm {
                    return peak * (step + 1) as f64 / warm as f64;
                }
                let progress = (step - warm) as f64 / (steps - warm).max(1) as f64;
                peak * 0.5 * (1.0 + (std::f64::consts::PI * progress.min(1.0)).cos())
            }
        }
    }
}

impl NetSpec {
    /// Table 4's network `name` (`A` 128-18, `B` 256-18, `C` 256-12) with this project's
    /// recipe (55% dense sparse layers, batches of 128, Adam peaking at 10⁻³ after a
    /// linear warm-up over 5% of the steps, then a cosine decay towards 0).
    pub fn table4(name: &str, epochs: usize, seed: u64) -> Result<Self> {
        let (neurons, sparse_layers) = match name {
            "A" => (128, 18),
            "B" => (256, 18),
            "C" => (256, 12),
            "D" => bail!(
                "net D is trained on CIFAR-10 (convolutions before its sparse layers), which no \
                 package registry reachable here ships: not reproduced"
            ),
            other => bail!("unknown network `{other}`: Table 4's MNIST networks are A, B and C"),
        };
        Ok(Self {
            name: name.to_string(),
            neurons,
            sparse_layers,
            density: 0.55,
            epochs,
            batch: 128,
            learning_rate: 1e-3,
            schedule: Schedule::WarmupCosine { warmup: 0.05 },
            clip_norm: None,
            seed,
        })
    }

    /// Checks the recipe: at least one epoch and one image a batch, a positive finite
    /// rate, a warm-up share in `[0, 1)`, a positive finite clipping norm, a density in
    /// `(0, 1]`.
    pub fn validate(&self) -> Result<()> {
        if self.epochs == 0 || self.batch == 0 || self.neurons == 0 {
            bail!("epochs, batch and neurons must be at least 1: {self:?}");
        }
        if !(self.learning_rate.is_finite() && self.learning_rate > 0.0) {
            bail!(
                "the learning rate must be positive and finite, got {}",
                self.learning_rate
            );
        }
        if let Schedule::WarmupCosine { warmup } = self.schedule
            && !(0.0..1.0).contains(&warmup)
        {
            bail!("the warm-up share must be in [0, 1), got {warmup}");
        }
        if let Some(norm) = self.clip_norm
            && !(norm.is_finite() && norm > 0.0)
        {
            bail!("the gradient clipping norm must be positive and finite, got {norm}");
        }
        if !(self.density > 0.0 && self.density <= 1.0) {
            bail!("the density must be in (0, 1], got {}", self.density);
        }
        Ok(())
    }

    /// The widths of the chain: 784, N (l + 1 times), 10.
    pub fn widths(&self) -> Vec<usize> {
        let mut widths = vec![INPUTS];
        widths.extend(std::iter::repeat_n(self.neurons, self.sparse_layers + 1));
        widths.push(CLASSES);
        widths
    }
}

/// What a training run gives.
#[derive(Debug, Clone, Serialize)]
pub struct TrainReport {
    /// The recipe.
    pub spec: NetSpec,
    /// Wall time of the training, s.
    pub train_seconds: f64,
    /// Mean loss of each epoch.
    pub epoch_loss: Vec<f64>,
    /// Top-1 accuracy on the test images after each epoch, from candle's forward pass
    /// (for watching the run; it may differ from the reference's in a near tie).
    pub epoch_test_accuracy: Vec<f64>,
    /// Learning rate of the last step of each epoch.
    pub epoch_learning_rate: Vec<f64>,
    /// Top-1 accuracy on the 10000 test images, from the CPU reference on the exported
    /// network (the engine's semantics).
    pub test_accuracy: f64,
    /// Stored weights of every layer.
    pub nnz: Vec<usize>,
    /// Threads candle's CPU kernels used.
    pub threads: usize,
}

/// One layer being trained: weight `[out, in]`, bias `[out]`, mask (sparse layers).
struct Layer {
    weight: Var,
    bias: Var,
    mask: Option<Tensor>,
    mask_values: Option<Vec<bool>>,
}

impl Layer {
    fn effective_weight(&self) -> Result<Tensor> {
        Ok(match &self.mask {
            Some(mask) => self.weight.as_tensor().mul(mask)?,
            None => self.weight.as_tensor().clone(),
        })
    }
}

fn init_layers(spec: &NetSpec, device: &Device, rng: &mut ChaCha8Rng) -> Result<Vec<Layer>> {
    let widths = spec.widths();
    let last = widths.len() - 2;
    let mut layers = Vec::new();
    for (l, pair) in widths.windows(2).enumerate() {
        let (n_in, n_out) = (pair[0], pair[1]);
        let sparse = l >= 1 && l < last;
        let mask_values: Option<Vec<bool>> = sparse.then(|| {
            (0..n_in * n_out)
                .map(|_| rng.random_bool(spec.density))
                .collect()
        });
        let fan_in = n_in as f64 * if sparse { spec.density } else { 1.0 };
        let std = (2.0 / fan_in).sqrt();
        let weights: Vec<f32> = (0..n_in * n_out)
            .map(|_| (normal(rng) * std) as f32)
            .collect();
        let weight = Var::from_tensor(&Tensor::from_vec(weights, (n_out, n_in), device)?)?;
        let bias = Var::from_tensor(&Tensor::zeros(n_out, DType::F32, device)?)?;
        let mask = match &mask_values {
            Some(m) => Some(Tensor::from_vec(
                m.iter()
                    .map(|&k| f32::from(u8::from(k)))
                    .collect::<Vec<f32>>(),
                (n_out, n_in),
                device,
            )?),
            None => None,
        };
        layers.push(Layer {
            weight,
            bias,
            mask,
            mask_values,
        });
    }
    Ok(layers)
}

/// A standard normal draw (Box–Muller), so that the initial weights depend on the seed only.
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = rng.random_range(f64::EPSILON..1.0);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// The clipped output of every layer, the last one's being the scores. The values are
/// exactly `clip(Z + b)`; the gradient is leaky outside `[0, U]` ([`LEAK`]), so that a
/// unit (a class's score above all) pushed below 0 can come back.
fn forward(layers: &[Layer], x: &Tensor) -> Result<Tensor> {
    let mut y = x.clone();
    for layer in layers {
        let z = y
            .matmul(&layer.effective_weight()?.t()?)?
            .broadcast_add(layer.bias.as_tensor())?;
        let clipped = z.clamp(0f32, UPPER_BOUND)?;
        // leak − leak.detach() is exactly 0 in value, LEAK·(1 − clip') in gradient.
        let leak = ((&z - &clipped)? * LEAK)?;
        y = (&clipped + (&leak - leak.detach())?)?;
    }
    Ok(y)
}

/// Scales the gradients of `vars` in `grads` so that their global L2 norm is at most
/// `max_norm` (unchanged when it already is).
fn clip_gradient(grads: &mut GradStore, vars: &[Var], max_norm: f64) -> Result<()> {
    let mut squares = 0.0f64;
    for var in vars {
        if let Some(g) = grads.get(var.as_tensor()) {
            squares += f64::from(g.sqr()?.sum_all()?.to_scalar::<f32>()?);
        }
    }
    let norm = squares.sqrt();
    if norm > max_norm {
        let scale = max_norm / norm;
        for var in vars {
            if let Some(g) = grads.remove(var.as_tensor()) {
                grads.insert(var.as_tensor(), (g * scale)?);
            }
        }
    }
    Ok(())
}

/// Top-1 accuracy of the layers' forward pass on `x` (the reference's tie rule: the
/// lowest class among equal largest scores).
fn forward_accuracy(layers: &[Layer], x: &Tensor, labels: &[u8]) -> Result<f64> {
    let scores = forward(layers, x)?.detach();
    let (rows, classes) = scores.dims2()?;
    let values: Vec<f32> = scores.flatten_all()?.to_vec1()?;
    let view = ndarray::ArrayView2::from_shape((rows, classes), &values)?;
    let predictions = spdnn_reference::predictions(view);
    Ok(spdnn_reference::correct(&predictions, labels) as f64 / labels.len().max(1) as f64)
}

/// Dense `[count, 784]` pixels in `[0, 1]` of the images `indices`.
fn batch_tensor(set: &LabelledImages, indices: &[usize], device: &Device) -> Result<Tensor> {
    let mut data = Vec::with_capacity(indices.len() * INPUTS);
    for &i in indices {
        let image = &set.images.pixels[i * INPUTS..(i + 1) * INPUTS];
        data.extend(image.iter().map(|&g| f32::from(g) / 255.0));
    }
    Ok(Tensor::from_vec(data, (indices.len(), INPUTS), device)?)
}

/// Trains `spec` on `train`, exports it, scores it on `test` with the CPU reference and
/// writes `{dir}/{name}.safetensors` and `{dir}/{name}.json` (the report). `progress` gets
/// one line per epoch.
pub fn train(
    spec: &NetSpec,
    train: &LabelledImages,
    test: &LabelledImages,
    dir: &Path,
    mut progress: impl FnMut(&str),
) -> Result<TrainReport> {
    if train.images.height * train.images.width != INPUTS {
        bail!("the training images are not 28 × 28");
    }
    spec.validate()?;
    let device = Device::Cpu;
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    let layers = init_layers(spec, &device, &mut rng)?;
    let vars: Vec<Var> = layers
        .iter()
        .flat_map(|l| [l.weight.clone(), l.bias.clone()])
        .collect();
    let mut optimizer = AdamW::new(
        vars.clone(),
        ParamsAdamW {
            lr: spec.learning_rate,
            weight_decay: 0.0,
            ..ParamsAdamW::default()
        },
    )?;
    let test_x = batch_tensor(test, &(0..test.images.count).collect::<Vec<_>>(), &device)?;
    let start = Instant::now();
    let mut order: Vec<usize> = (0..train.images.count).collect();
    let steps_per_epoch = order.len().div_ceil(spec.batch);
    let total_steps = steps_per_epoch * spec.epochs;
    let (mut epoch_loss, mut epoch_test_accuracy, mut epoch_learning_rate) =
        (Vec::new(), Vec::new(), Vec::new());
    for epoch in 0..spec.epochs {
        order.shuffle(&mut rng);
        let (mut total, mut steps) = (0.0, 0usize);
        for chunk in order.chunks(spec.batch) {
            let step = epoch * steps_per_epoch + steps;
            optimizer.set_learning_rate(spec.schedule.rate(spec.learning_rate, step, total_steps));
            let x = batch_tensor(train, chunk, &device)?;
            let labels: Vec<u32> = chunk.iter().map(|&i| u32::from(train.labels[i])).collect();
            let y = Tensor::from_vec(labels, chunk.len(), &device)?;
            let scores = forward(&layers, &x)?;
            let loss = candle_nn::loss::cross_entropy(&(scores * SCORE_SCALE)?, &y)?;
            let mut grads = loss.backward()?;
            if let Some(max_norm) = spec.clip_norm {
                clip_gradient(&mut grads, &vars, max_norm)?;
            }
            optimizer.step(&grads)?;
            for layer in &layers {
                let projected = layer.bias.as_tensor().clamp(f32::MIN, 0f32)?;
                layer.bias.set(&projected)?;
            }
            total += f64::from(loss.to_scalar::<f32>()?);
            steps += 1;
        }
        let mean = total / steps.max(1) as f64;
        epoch_loss.push(mean);
        let watched = forward_accuracy(&layers, &test_x, &test.labels)?;
        epoch_test_accuracy.push(watched);
        epoch_learning_rate.push(optimizer.learning_rate());
        progress(&format!(
            "net {} epoch {}/{}: loss {mean:.4}, test accuracy {:.2}% ({:.0} s)",
            spec.name,
            epoch + 1,
            spec.epochs,
            100.0 * watched,
            start.elapsed().as_secs_f64()
        ));
    }
    let train_seconds = start.elapsed().as_secs_f64();
    let network = export(&layers)?;
    let test_accuracy = accuracy(&network, test)?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let model = dir.join(format!("{}.safetensors", spec.name));
    spdnn_sdgc::trained::write_safetensors(&model, &network, Some(UPPER_BOUND))?;
    let report = TrainReport {
        spec: spec.clone(),
        train_seconds,
        epoch_loss,
        epoch_test_accuracy,
        epoch_learning_rate,
        test_accuracy,
        nnz: network
            .layers()
            .iter()
            .map(spdnn_formats::SparseMatrix::nnz)
            .collect(),
        threads: candle_core::utils::get_num_threads(),
    };
    let json = dir.join(format!("{}.json", spec.name));
    std::fs::write(&json, serde_json::to_string_pretty(&report)? + "\n")
        .with_context(|| format!("writing {}", json.display()))?;
    Ok(report)
}

/// The trained layers as the project's network: `in × out` CSR (the masked entries of the
/// sparse layers, every entry of the dense ones) with the biases.
fn export(layers: &[Layer]) -> Result<Network> {
    let mut csrs = Vec::new();
    let mut biases = Vec::new();
    for layer in layers {
        let w = layer.effective_weight()?;
        let (n_out, n_in) = w.dims2()?;
        let values: Vec<f32> = w.flatten_all()?.to_vec1()?;
        let mut triplets = Vec::new();
        for k in 0..n_out {
            for j in 0..n_in {
                if layer.mask_values.as_ref().is_none_or(|m| m[k * n_in + j]) {
                    triplets.push((j as u32, k as u32, values[k * n_in + j]));
                }
            }
        }
        csrs.push(Csr::from_triplets(n_in, n_out, &triplets)?);
        biases.push(layer.bias.as_tensor().to_vec1::<f32>()?);
    }
    Ok(Network::chain(csrs)?.with_biases(biases)?)
}

/// Top-1 accuracy of `network` on `set` with the CPU reference (f32, the engine's rule).
pub fn accuracy(network: &Network, set: &LabelledImages) -> Result<f64> {
    let features = set.features()?;
    let biases = network.biases().context("the network has no biases")?;
    let options = spdnn_reference::Options {
        keep_output: true,
        collect_stats: false,
        ..spdnn_reference::Options::default()
    };
    let out: spdnn_reference::Inference<f32> = spdnn_reference::infer_with_biases(
        network.layers(),
        &features,
        biases,
        UPPER_BOUND,
        &options,
    )?;
    let scores = out.output.context("the reference kept no output")?;
    let predictions = spdnn_reference::predictions(scores.view());
    Ok(spdnn_reference::correct(&predictions, &set.labels) as f64 / set.labels.len().max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use spdnn_sdgc::images::MnistImages;

    /// A tiny learnable set: class = which third of the image is lit.
    fn toy(count: usize, seed: u64) -> LabelledImages {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut pixels = vec![0u8; count * INPUTS];
        let mut labels = Vec::with_capacity(count);
        for i in 0..count {
            let class = rng.random_range(0..3u8);
            let band = INPUTS / 3;
            for p in 0..band {
                if rng.random_bool(0.5) {
                    pixels[i * INPUTS + class as usize * band + p] = 200;
                }
            }
            labels.push(class);
        }
        LabelledImages {
            images: MnistImages {
                count,
                height: 28,
                width: 28,
                pixels,
            },
            labels,
        }
    }

    #[test]
    fn a_small_net_learns_exports_and_scores_the_same_in_the_reference() {
        let spec = NetSpec {
            name: "T".into(),
            neurons: 16,
            sparse_layers: 2,
            density: 0.55,
            epochs: 3,
            batch: 32,
            learning_rate: 3e-3,
            schedule: Schedule::WarmupCosine { warmup: 0.1 },
            clip_norm: Some(1.0),
            seed: 7,
        };
        let dir = tempfile::tempdir().unwrap();
        let report = train(&spec, &toy(600, 1), &toy(200, 2), dir.path(), |_| {}).unwrap();
        assert!(report.test_accuracy > 0.9, "{report:?}");
        let read =
            spdnn_sdgc::trained::read_safetensors(&dir.path().join("T.safetensors")).unwrap();
        assert_eq!(read.upper_bound, Some(UPPER_BOUND));
        let widths: Vec<usize> = read.network.layers().iter().map(|w| w.ncols()).collect();
        assert_eq!(widths, vec![16, 16, 16, 10]);
        use spdnn_formats::SparseMatrix;
        assert_eq!(read.network.layers()[0].nnz(), 784 * 16);
        assert!(read.network.layers()[1].nnz() < 16 * 16);
        assert!(
            read.network
                .biases()
                .unwrap()
                .iter()
                .flatten()
                .all(|&b| b <= 0.0)
        );
        assert_eq!(
            accuracy(&read.network, &toy(200, 2)).unwrap(),
            report.test_accuracy
        );
        // The same seed gives the same network.
        let again = tempfile::tempdir().unwrap();
        train(&spec, &toy(600, 1), &toy(200, 2), again.path(), |_| {}).unwrap();
        assert_eq!(
            std::fs::read(dir.path().join("T.safetensors")).unwrap(),
            std::fs::read(again.path().join("T.safetensors")).unwrap()
        );
    }

    #[test]
    fn the_schedule_warms_up_linearly_then_decays_to_about_zero() {
        let schedule = Schedule::WarmupCosine { warmup: 0.1 };
        let rates: Vec<f64> = (0..100).map(|s| schedule.rate(2.0, s, 100)).collect();
        // Ten steps of warm-up: 0.2, 0.4, …, 2.0.
        for (s, &rate) in rates[..10].iter().enumerate() {
            assert!((rate - 0.2 * (s + 1) as f64).abs() < 1e-12, "{rates:?}");
        }
        assert_eq!(rates[10], 2.0);
        assert!(rates[10..].windows(2).all(|w| w[1] < w[0]), "{rates:?}");
        assert!(rates[99] > 0.0 && rates[99] < 2.0 * 1e-3, "{rates:?}");
        // Half-way through the decay, half the peak.
        assert!((Schedule::WarmupCosine { warmup: 0.0 }.rate(2.0, 50, 100) - 1.0).abs() < 1e-12);
        assert!((0..7).all(|s| Schedule::Constant.rate(0.5, s, 7) == 0.5));
    }

    #[test]
    fn a_bad_recipe_is_refused_before_training() {
        let good = NetSpec::table4("A", 1, 0).unwrap();
        assert!(good.validate().is_ok());
        let bad = [
            NetSpec {
                epochs: 0,
                ..good.clone()
            },
            NetSpec {
                learning_rate: f64::NAN,
                ..good.clone()
            },
            NetSpec {
                learning_rate: 0.0,
                ..good.clone()
            },
            NetSpec {
                schedule: Schedule::WarmupCosine { warmup: 1.0 },
                ..good.clone()
            },
            NetSpec {
                clip_norm: Some(0.0),
                ..good.clone()
            },
            NetSpec {
                density: 0.0,
                ..good.clone()
            },
        ];
        for spec in bad {
            assert!(spec.validate().is_err(), "{spec:?}");
        }
    }

    #[test]
    fn clipping_scales_the_whole_gradient_to_the_norm() {
        let device = Device::Cpu;
        let a = Var::from_tensor(&Tensor::new(&[1f32, 2.0], &device).unwrap()).unwrap();
        let b = Var::from_tensor(&Tensor::new(&[3f32], &device).unwrap()).unwrap();
        // Gradient (3, 4) for a and (12) for b: norm 13.
        let loss = ((a.as_tensor() * &Tensor::new(&[3f32, 4.0], &device).unwrap())
            .unwrap()
            .sum_all()
            .unwrap()
            + (b.as_tensor() * 12.0).unwrap().sum_all().unwrap())
        .unwrap();
        let vars = [a.clone(), b.clone()];
        let mut grads = loss.backward().unwrap();
        clip_gradient(&mut grads, &vars, 26.0).unwrap();
        let ga: Vec<f32> = grads.get(a.as_tensor()).unwrap().to_vec1().unwrap();
        assert_eq!(ga, vec![3.0, 4.0], "below the norm: unchanged");
        clip_gradient(&mut grads, &vars, 1.3).unwrap();
        let ga: Vec<f32> = grads.get(a.as_tensor()).unwrap().to_vec1().unwrap();
        let gb: Vec<f32> = grads.get(b.as_tensor()).unwrap().to_vec1().unwrap();
        assert!(
            (ga[0] - 0.3).abs() < 1e-6 && (ga[1] - 0.4).abs() < 1e-6,
            "{ga:?}"
        );
        assert!((gb[0] - 1.2).abs() < 1e-6, "{gb:?}");
    }

    #[test]
    fn table4_names_its_nets_and_refuses_d() {
        assert_eq!(NetSpec::table4("B", 1, 0).unwrap().widths().len(), 21);
        let d = NetSpec::table4("D", 1, 0).unwrap_err().to_string();
        assert!(d.contains("CIFAR-10"), "{d}");
        assert!(NetSpec::table4("E", 1, 0).is_err());
    }
}
