//! A run: a method on a benchmark, timed, checked against a truth.

use anyhow::Result;
use spdnn_sdgc::benchmark::Benchmark;

use spdnn_adaptive::MemorySettings;
use spdnn_adaptive::ranks::{Ranks, gather_f64, gather_u32, merge_categories, rank_gpu, slab};
use spdnn_sdgc::Input;

use crate::method::{Method, Problem, RunConfig};
use crate::report::{CategoryCheck, RunReport};

/// The categories a run must produce, and where they came from.
#[derive(Debug, Clone)]
pub struct Truth {
    /// 1-based ascending rows.
    pub categories: Vec<u32>,
    /// A label such as the truth file's path or "cpu reference".
    pub source: String,
    /// The truth covers rows `1..=rows` only.
    pub rows: usize,
}

impl Truth {
    /// The truth restricted to the first `rows` rows (rows are independent).
    pub fn restricted(&self, rows: usize) -> Truth {
        Truth {
            categories: self
                .categories
                .iter()
                .copied()
                .filter(|&r| (r as usize) <= rows)
                .collect(),
            source: self.source.clone(),
            rows: rows.min(self.rows),
        }
    }
}

/// A finished run: its report and the categories it found.
#[derive(Debug, Clone)]
pub struct Execution {
    /// What is printed and written to results.
    pub report: RunReport,
    /// 1-based ascending rows found.
    pub categories: Vec<u32>,
}

/// `found` (1-based rows of a run over `rows` rows) against `truth` on the rows both cover:
/// a truth of fewer rows than were run is compared with the categories among its rows
/// only, and a run of fewer rows than the truth covers (the CPU on a slice) with the
/// truth's categories among the rows run.
fn check_rows(found: &[u32], truth: &Truth, rows: usize) -> CategoryCheck {
    let covered = truth.rows.min(rows);
    let found: Vec<u32> = found
        .iter()
        .copied()
        .filter(|&r| (r as usize) <= covered)
        .collect();
    let expected = truth.restricted(covered);
    CategoryCheck::compare(&found, &expected.categories, &truth.source)
}

/// Runs `method` on `problem` and checks it against `truth` when given, on the rows both
/// cover ([`check_rows`]).
pub fn execute(
    method: &dyn Method,
    benchmark: &Benchmark,
    problem: &Problem<'_>,
    config: &RunConfig,
    truth: Option<&Truth>,
) -> Result<Execution> {
    let output = method.run(problem, config)?;
    let check = truth.map(|t| check_rows(&output.categories, t, problem.input.rows()));
    let report = RunReport::new(method.name(), benchmark, &output, check);
    Ok(Execution {
        report,
        categories: output.categories,
    })
}

/// Runs `method` on this rank's slab of `problem`'s rows ([`spdnn_adaptive::ranks::slab`])
/// and gathers the outcome at rank 0, which merges the categories (in global rows), takes
/// the slowest rank's time of each pass, checks `truth` and returns the execution; the
/// other ranks return `None`. A rank that fails makes every rank return the error (every
/// rank takes part in every gather, so none waits for a rank that gave up).
pub fn execute_ranked(
    method: &dyn Method,
    benchmark: &Benchmark,
    problem: &Problem<'_>,
    config: &RunConfig,
    truth: Option<&Truth>,
    ranks: &dyn Ranks,
) -> Result<Option<Execution>> {
    let rows = problem.input.rows();
    let range = slab(rows, ranks.rank(), ranks.size());
    // A GPU method's rank takes a GPU of its own; the GPUs it ran on go into the report.
    let (config, own_gpus) = if method.needs_gpu() {
        let config = rank_config(config, ranks.local_rank(), crate::gpu_count());
        let settings: MemorySettings = config.options.get();
        let own: Vec<u32> = settings.gpus.iter().map(|&o| o as u32).collect();
        (config, own)
    } else {
        (config.clone(), Vec::new())
    };
    let config = &config;
    let slab_input = Input {
        features: problem.input.features.rows_slice(range),
        origin: problem.input.origin.clone(),
    };
    let part = Problem {
        input: &slab_input,
        ..*problem
    };
    let outcome = method.run(&part, config);
    let status = match &outcome {
        Ok(_) => Vec::new(),
        Err(e) => format!("rank {}: {e:#}", ranks.rank()).into_bytes(),
    };
    let (categories, times) = match &outcome {
        Ok(o) => {
            let mut times = o.infer_ms.clone();
            times.push(o.total_ms);
            (o.categories.clone(), times)
        }
        Err(_) => (Vec::new(), Vec::new()),
    };
    let statuses = ranks.gather(&status);
    let all_categories = gather_u32(ranks, &categories);
    let all_times = gather_f64(ranks, &times);
    let all_gpus = gather_u32(ranks, &own_gpus);
    let mut output = outcome?;
    let (Some(statuses), Some(all_categories), Some(all_times), Some(all_gpus)) =
        (statuses, all_categories, all_times, all_gpus)
    else {
        return Ok(None);
    };
    let failures: Vec<String> = statuses
        .iter()
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect();
    if !failures.is_empty() {
        anyhow::bail!("{}", failures.join("; "));
    }
    output.categories = merge_categories(rows, &all_categories);
    let passes = output.infer_ms.len();
    output.infer_ms = (0..passes)
        .map(|i| {
            all_times
                .iter()
                .filter_map(|t| t.get(i).copied())
                .fold(0.0, f64::max)
        })
        .collect();
    output.total_ms = all_times
        .iter()
        .filter_map(|t| t.last().copied())
        .fold(0.0, f64::max);
    output
        .details
        .found
        .insert("ranks".into(), serde_json::json!(ranks.size()));
    if all_gpus.iter().any(|g| !g.is_empty()) {
        let per_rank: Vec<String> = all_gpus
            .iter()
            .map(|g| {
                let ordinals: Vec<String> = g.iter().map(u32::to_string).collect();
                ordinals.join("+")
            })
            .collect();
        output
            .details
            .found
            .insert("rank gpus".into(), serde_json::json!(per_rank.join(",")));
    }
    let check = truth.map(|t| check_rows(&output.categories, t, rows));
    let report = RunReport::new(method.name(), benchmark, &output, check);
    Ok(Some(Execution {
        report,
        categories: output.categories,
    }))
}

/// A GPU method's rank configuration: when the run names no GPUs (`--gpus`) and the rank
/// sees `visible` GPUs, it takes one of its own, [`rank_gpu`] of its
/// host-local rank (one rank per GPU under `mpirun -np <GPUs>`); otherwise the
/// configuration as given (every rank then runs on the GPUs `--gpus` names).
fn rank_config(config: &RunConfig, local_rank: usize, visible: usize) -> RunConfig {
    let mut config = config.clone();
    let settings: MemorySettings = config.options.get();
    if settings.gpus.is_empty()
        && let Some(ordinal) = rank_gpu(local_rank, visible)
    {
        config
            .options
            .edit::<MemorySettings>(|memory| memory.gpus = vec![ordinal]);
    }
    config
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::glare::GlareSettings;
    use crate::options::OptionSet;
    use spdnn_cuda::method::MethodOptions;
    use spdnn_snicit::SnicitOptions;
    use spdnn_xy::XyOptions;

    #[test]
    fn default_options_are_valid_and_cache_under_the_data_dir() {
        let options = OptionSet::default();
        options.validate().unwrap();
        let dir = spdnn_sdgc::paths::data_dir().join("cache").join("xy");
        let xy: XyOptions = options.get();
        let snicit: SnicitOptions = options.get();
        assert_eq!(xy.cache_dir.as_deref(), Some(dir.as_path()));
        assert_eq!(snicit.xy.cache_dir.as_deref(), Some(dir.as_path()));
        assert_eq!(xy.delete_at, Some(22));
        assert_eq!(snicit.threshold, 30);
        assert_eq!(options.get::<GlareSettings>(), GlareSettings::default());
        assert!(xy.glare.is_none() && snicit.glare.is_none());
        assert!(snicit.xy.glare.is_none());
        assert_eq!(RunConfig::default().options, options);
    }

    #[test]
    fn the_check_covers_the_rows_both_the_run_and_the_truth_cover() {
        let truth = Truth {
            categories: vec![2, 5, 9],
            source: "t".into(),
            rows: 10,
        };
        // A run of the first 6 rows (the CPU on a slice) is checked on those rows.
        assert!(check_rows(&[2, 5], &truth, 6).matched);
        assert!(!check_rows(&[2], &truth, 6).matched);
        assert_eq!(check_rows(&[2], &truth, 6).missing, [5]);
        // A truth of 10 rows checks only its rows of a longer run.
        assert!(check_rows(&[2, 5, 9, 12], &truth, 20).matched);
        // A row the truth does not have, among the rows run, is extra.
        assert_eq!(check_rows(&[2, 5, 6], &truth, 8).extra, [6]);
    }

    #[test]
    fn a_rank_takes_its_own_gpu_unless_the_run_names_them() {
        let gpus_of = |config: &RunConfig, local: usize, visible: usize| {
            rank_config(config, local, visible)
                .options
                .get::<MemorySettings>()
                .gpus
        };
        let plain = RunConfig::default();
        let four: Vec<Vec<usize>> = (0..4).map(|local| gpus_of(&plain, local, 4)).collect();
        assert_eq!(four, [[0], [1], [2], [3]]);
        assert_eq!(gpus_of(&plain, 3, 2), [1]);
        // No GPU seen (no driver): the options stay as given.
        assert!(gpus_of(&plain, 1, 0).is_empty());
        let mut named = RunConfig::default();
        named
            .options
            .edit::<MemorySettings>(|memory| memory.gpus = vec![1, 1]);
        assert_eq!(gpus_of(&named, 2, 4), [1, 1]);
    }

    #[test]
    fn ranks_in_threads_give_the_categories_of_one_process() {
        use spdnn_adaptive::ranks::{InProcess, Single};
        let network = spdnn_sdgc::generator::network(256, 6, 0).unwrap();
        let input = spdnn_sdgc::images::synthetic(203, 256, 3).unwrap();
        let problem = Problem {
            network: &network,
            input: &input,
            bias: -0.1,
            upper_bound: 32.0,
        };
        let config = RunConfig {
            warmup: 0,
            repetitions: 2,
            ..RunConfig::default()
        };
        let benchmark = Benchmark::new(
            256,
            6,
            input.rows(),
            Some(-0.1),
            spdnn_sdgc::benchmark::WeightsOrigin::Generated { seed: 0 },
            input.origin.clone(),
        )
        .unwrap();
        let cpu = crate::cpu::CpuReference;
        let one = execute(&cpu, &benchmark, &problem, &config, None).unwrap();
        let single = execute_ranked(&cpu, &benchmark, &problem, &config, None, &Single)
            .unwrap()
            .unwrap();
        assert_eq!(single.categories, one.categories);
        assert!(!one.categories.is_empty());
        let truth = Truth {
            categories: one.categories.clone(),
            source: "one process".into(),
            rows: input.rows(),
        };
        for size in [2, 3, 4] {
            let group = InProcess::group(size);
            let results: Vec<Option<Execution>> = std::thread::scope(|s| {
                let handles: Vec<_> = group
                    .iter()
                    .map(|ranks| {
                        let (problem, config, benchmark, truth, cpu) =
                            (&problem, &config, &benchmark, &truth, &cpu);
                        s.spawn(move || {
                            execute_ranked(cpu, benchmark, problem, config, Some(truth), ranks)
                                .unwrap()
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let root = results[0].as_ref().unwrap();
            assert_eq!(root.categories, one.categories, "{size} ranks");
            assert_eq!(root.report.matched, Some(true));
            assert_eq!(root.report.rows, input.rows());
            assert!(results[1..].iter().all(Option::is_none));
        }
    }

    #[test]
    fn zero_counts_are_rejected() {
        let cases: [fn(&mut OptionSet); 9] = [
            |o| o.edit::<SnicitOptions>(|s| s.threshold = 0),
            |o| o.edit::<SnicitOptions>(|s| s.samples = 0),
            |o| o.edit::<SnicitOptions>(|s| s.bins = 0),
            |o| o.edit::<SnicitOptions>(|s| s.refresh_interval = 0),
            |o| o.edit::<SnicitOptions>(|s| s.batch = Some(0)),
            |o| o.edit::<SnicitOptions>(|s| s.xy.delete_at = Some(0)),
            |o| o.edit::<XyOptions>(|x| x.delete_at = Some(0)),
            |o| o.edit::<GlareSettings>(|g| g.model_rows = 0),
            |o| o.edit::<GlareSettings>(|g| g.segment = Some(0)),
        ];
        for (i, change) in cases.iter().enumerate() {
            let mut options = OptionSet::default();
            change(&mut options);
            assert!(options.validate().is_err(), "case {i} was accepted");
        }
    }

    #[test]
    fn bad_epsilon_and_eta_are_rejected() {
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.01] {
            let options = SnicitOptions {
                epsilon: bad,
                ..SnicitOptions::default()
            };
            let message = options.validate().unwrap_err();
            assert!(message.contains("epsilon"), "{message}");
            let options = SnicitOptions {
                eta: bad,
                ..SnicitOptions::default()
            };
            assert!(options.validate().is_err());
        }
    }

    #[test]
    fn edge_values_are_accepted() {
        let mut options = OptionSet::default();
        options.edit::<SnicitOptions>(|s| {
            s.threshold = 100_000; // ≥ L: pre-convergence all the way
            s.epsilon = 0.0;
            s.eta = 0.0;
            s.batch = Some(1);
            s.xy.delete_at = None;
        });
        options.edit::<XyOptions>(|x| x.row_major_layers = Some(1));
        options.validate().unwrap();
    }
}
