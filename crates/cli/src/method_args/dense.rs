//! `dense`'s flag.

use std::any::TypeId;

use clap::Args;
use spdnn_engine::OptionSet;
use spdnn_engine::spdnn_dense::DenseOptions;

use super::GroupArgs;

/// The dense cuBLAS chain's math.
#[derive(Args, Clone, Debug, Default)]
#[command(next_help_heading = "dense")]
pub struct DenseArgs {
    /// Let cuBLAS use TF32 tensor ops in the products (faster, and lossy: each product's
    /// inputs rounded to a 10-bit mantissa; the run's details say `lossy`) [default: fp32,
    /// CUBLAS_PEDANTIC_MATH].
    #[arg(long)]
    pub dense_tf32: bool,
}

impl GroupArgs for DenseArgs {
    fn group(&self) -> TypeId {
        TypeId::of::<DenseOptions>()
    }

    fn apply(&self, options: &mut OptionSet) {
        if self.given().is_empty() {
            return;
        }
        options.edit::<DenseOptions>(|dense| dense.tf32 = self.dense_tf32);
    }

    fn flags(&self) -> Vec<(&'static str, bool)> {
        vec![("--dense-tf32", self.dense_tf32)]
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use spdnn_engine::Registry;

    use super::*;

    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: DenseArgs,
    }

    fn options(flags: &[&str]) -> DenseOptions {
        let argv = std::iter::once("test").chain(flags.iter().copied());
        let args = Wrapper::try_parse_from(argv).unwrap().args;
        let mut set = OptionSet::default();
        args.apply(&mut set);
        set.get()
    }

    #[test]
    fn fp32_by_default_and_tf32_only_when_asked() {
        assert_eq!(DenseOptions::default(), DenseOptions { tf32: false });
        assert_eq!(options(&[]), DenseOptions { tf32: false });
        assert_eq!(options(&["--dense-tf32"]), DenseOptions { tf32: true });
        assert!(Wrapper::try_parse_from(["test", "--dense-tf32=yes"]).is_err());
    }

    #[test]
    fn only_dense_reads_the_flag() {
        let registry = Registry::default();
        let readers: Vec<&str> = registry
            .names()
            .into_iter()
            .filter(|m| {
                registry
                    .get(m)
                    .unwrap()
                    .reads()
                    .contains(&TypeId::of::<DenseOptions>())
            })
            .collect();
        // auto reads the groups of the methods it may pick.
        assert_eq!(readers, ["dense", "dense+compress", "auto"]);
    }
}
