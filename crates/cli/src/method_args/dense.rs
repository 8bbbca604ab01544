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
    use spdnn_engine::Registry;

    use super::*;

    fn options(flags: &[&str]) -> DenseOptions {
        super::super::parse_group::<DenseArgs>(flags).unwrap().get()
    }

    #[test]
    fn fp32_by_default_and_tf32_only_when_asked() {
        assert_eq!(DenseOptions::default(), DenseOptions { tf32: false });
        assert_eq!(options(&[]), DenseOptions { tf32: false });
        assert_eq!(options(&["--dense-tf32"]), DenseOptions { tf32: true });
        assert!(super::super::parse_group::<DenseArgs>(&["--dense-tf32=yes"]).is_err());
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
