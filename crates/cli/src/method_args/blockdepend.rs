//! `blockdepend`'s flags.

use std::any::TypeId;

use clap::{Args, ValueEnum};
use spdnn_engine::OptionSet;
use spdnn_engine::spdnn_blockdepend::{
    BlockDependOptions, FormatChoice, ItemChoice, KernelFormats, PlacementChoice, SpreadChoice,
};

use super::{GroupArgs, at_least_one};

/// BlockDepend's parameters.
#[derive(Args, Clone, Debug, Default)]
#[command(next_help_heading = "blockdepend")]
pub struct BlockDependArgs {
    /// Run the network as given instead of its exact compression.
    #[arg(long)]
    pub bd_uncompressed: bool,
    /// Drop only rows of zeros, not rows all at the bound past the proved suffix.
    #[arg(long)]
    pub bd_no_retire: bool,
    /// Most rows per tile, 1 to 128 [default: as many as fit the block's shared memory,
    /// narrow tiles in whole items of 8 rows; 32 in global memory].
    #[arg(long, value_name = "ROWS", value_parser = at_least_one, allow_hyphen_values = true)]
    pub bd_tile: Option<usize>,
    /// Layer counts after which a new launch re-packs the surviving rows, comma-separated
    /// and increasing, or `none` for one launch [default: 4,8,16].
    #[arg(long, value_name = "L,L,…", value_parser = cuts, allow_hyphen_values = true)]
    pub bd_cuts: Option<Cuts>,
    /// Where tiles live: `auto` (per launch, by the model; launch 1 a row a lane where its
    /// rows are narrow and its layers ELL, later launches of narrow dense layers a row a
    /// warp), `shared`, `split` (inputs in shared memory, outputs through global memory),
    /// `global`, `lanes` (a row a lane in every launch that can) or `warps` (a row a warp in
    /// every launch that can) [default: auto].
    #[arg(long, value_enum, value_name = "WHERE")]
    pub bd_placement: Option<PlacementArg>,
    /// How the layers after the first are stored: `auto` (per layer, by the model), `dense`,
    /// `ell` (scaled entries where a layer's weights are multiples of one value) or
    /// `ell-pairs` (`(input, weight)` pairs everywhere, layer 1's too) [default: auto].
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub bd_format: Option<FormatArg>,
    /// How the layers' work items run: `auto` (exact items, one compiled instance per row
    /// count, wherever the tile lies in shared memory; circulant layers a lane four outputs,
    /// or a row a lane: a lane one output column of its warp's 32 rows),
    /// `gathers` (exact items, circulant layers gathered entry by entry like the others) or
    /// `predicated` (every item runs 8 rows, those it lacks switched off); the last two are
    /// the kernels before, for A/B runs [default: auto].
    #[arg(long, value_enum, value_name = "ITEMS")]
    pub bd_items: Option<ItemsArg>,
    /// Which launches after the first may spread their few rows over the whole GPU, one
    /// layer at a time with a grid-wide barrier: `auto` (launches with a layer of 256 KiB
    /// or more, N = 65536, where one block's chain through the tail is the launch's length),
    /// `always` (every launch with its tiles in shared memory, or split ones of two rows or
    /// more, and exact items) or `off` [default: auto].
    #[arg(long, value_enum, value_name = "WHICH")]
    pub bd_spread: Option<SpreadArg>,
    /// Most blocks of each launch's grid, its spread grid too [default: as many as the SMs
    /// hold]. Fewer leave SMs idle; with fewer blocks, tiles fill with fewer rows.
    #[arg(long, value_name = "BLOCKS", value_parser = at_least_one, allow_hyphen_values = true)]
    pub bd_grid_blocks: Option<usize>,
    /// Which layer formats the kernels are compiled for: `auto` (the network's own where
    /// its layers are scaled and none pairs, else every format), `layers` (the network's
    /// own) or `every` (the kernels before, for A/B runs) [default: auto].
    #[arg(long, value_enum, value_name = "WHICH")]
    pub bd_kernel_formats: Option<KernelFormatsArg>,
    /// Enqueue each timed pass call by call instead of replaying it as one CUDA graph (the
    /// queues' memset and every launch, captured when a batch is loaded).
    #[arg(long)]
    pub bd_no_graph: bool,
    /// Load a binary batch as its columns even where launch 1 could count a folded layer 1
    /// from a bitmap (one bit an input), for A/B runs.
    #[arg(long)]
    pub bd_no_bitmap: bool,
}

/// The cuts of `--bd-cuts`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cuts(pub Vec<usize>);

/// `none`, or layer counts ≥ 1, comma-separated, strictly increasing.
fn cuts(s: &str) -> Result<Cuts, String> {
    if s.trim().eq_ignore_ascii_case("none") {
        return Ok(Cuts(Vec::new()));
    }
    let values = s
        .split(',')
        .map(|v| at_least_one(v).map_err(|e| format!("'{v}': {e}")))
        .collect::<Result<Vec<usize>, String>>()?;
    if let Some(pair) = values.windows(2).find(|p| p[1] <= p[0]) {
        return Err(format!(
            "cuts must increase strictly, got {} after {}",
            pair[1], pair[0]
        ));
    }
    Ok(Cuts(values))
}

/// Where tiles live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PlacementArg {
    /// Per launch, by the model.
    Auto,
    /// Shared memory (an error where a tile does not fit).
    Shared,
    /// The layer's inputs in shared memory, its outputs through global memory (an error
    /// where a tile does not fit).
    Split,
    /// Global memory.
    Global,
    /// A row a lane in every launch whose rows are narrow and whose layers are ELL (launch 1
    /// only by default); the model's choice for the others.
    Lanes,
    /// A row a warp in every launch after the first whose layers are dense and narrow (the
    /// default for those); the model's choice for the others.
    Warps,
}

/// How layers are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// Per layer, by the model.
    Auto,
    /// Dense, padded.
    Dense,
    /// Sliced ELL (scaled entries where a layer's weights are multiples of one value).
    Ell,
    /// Sliced ELL of `(input, weight)` pairs everywhere, layer 1's included.
    EllPairs,
}

/// How work items run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ItemsArg {
    /// Exact items where the tile lies in shared memory.
    Auto,
    /// Predicated items everywhere.
    Predicated,
    /// Exact items, circulant layers gathered entry by entry like the others.
    Gathers,
}

/// Which launches spread their rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SpreadArg {
    /// Launches with a layer of 256 KiB or more.
    Auto,
    /// Every launch after the first that can.
    Always,
    /// None.
    Off,
}

/// Which layer formats the kernels are compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KernelFormatsArg {
    /// The network's own where its layers are scaled and none pairs, else every format.
    Auto,
    /// Those of the network's layers.
    Layers,
    /// Every format.
    Every,
}

impl GroupArgs for BlockDependArgs {
    fn group(&self) -> TypeId {
        TypeId::of::<BlockDependOptions>()
    }

    fn apply(&self, options: &mut OptionSet) {
        if self.given().is_empty() {
            return;
        }
        options.edit::<BlockDependOptions>(|bd| {
            if self.bd_uncompressed {
                bd.compress = false;
            }
            if self.bd_no_retire {
                bd.retire = false;
            }
            if let Some(tile) = self.bd_tile {
                bd.tile_rows = Some(tile);
            }
            if let Some(Cuts(cuts)) = &self.bd_cuts {
                bd.cuts = Some(cuts.clone());
            }
            if let Some(placement) = self.bd_placement {
                bd.placement = match placement {
                    PlacementArg::Auto => PlacementChoice::Auto,
                    PlacementArg::Shared => PlacementChoice::Shared,
                    PlacementArg::Split => PlacementChoice::Split,
                    PlacementArg::Global => PlacementChoice::Global,
                    PlacementArg::Lanes => PlacementChoice::Lanes,
                    PlacementArg::Warps => PlacementChoice::Warps,
                };
            }
            if let Some(format) = self.bd_format {
                bd.format = match format {
                    FormatArg::Auto => FormatChoice::Auto,
                    FormatArg::Dense => FormatChoice::Dense,
                    FormatArg::Ell => FormatChoice::Ell,
                    FormatArg::EllPairs => FormatChoice::EllPairs,
                };
            }
            if let Some(items) = self.bd_items {
                bd.items = match items {
                    ItemsArg::Auto => ItemChoice::Auto,
                    ItemsArg::Predicated => ItemChoice::Predicated,
                    ItemsArg::Gathers => ItemChoice::Gathers,
                };
            }
            if let Some(spread) = self.bd_spread {
                bd.spread = match spread {
                    SpreadArg::Auto => SpreadChoice::Auto,
                    SpreadArg::Always => SpreadChoice::Always,
                    SpreadArg::Off => SpreadChoice::Off,
                };
            }
            if let Some(blocks) = self.bd_grid_blocks {
                bd.grid_blocks = Some(blocks);
            }
            if let Some(formats) = self.bd_kernel_formats {
                bd.kernel_formats = match formats {
                    KernelFormatsArg::Auto => KernelFormats::Auto,
                    KernelFormatsArg::Layers => KernelFormats::Layers,
                    KernelFormatsArg::Every => KernelFormats::Every,
                };
            }
            if self.bd_no_graph {
                bd.graph = false;
            }
            if self.bd_no_bitmap {
                bd.input_bitmap = false;
            }
        });
    }

    fn flags(&self) -> Vec<(&'static str, bool)> {
        vec![
            ("--bd-uncompressed", self.bd_uncompressed),
            ("--bd-no-retire", self.bd_no_retire),
            ("--bd-tile", self.bd_tile.is_some()),
            ("--bd-cuts", self.bd_cuts.is_some()),
            ("--bd-placement", self.bd_placement.is_some()),
            ("--bd-format", self.bd_format.is_some()),
            ("--bd-items", self.bd_items.is_some()),
            ("--bd-spread", self.bd_spread.is_some()),
            ("--bd-grid-blocks", self.bd_grid_blocks.is_some()),
            ("--bd-kernel-formats", self.bd_kernel_formats.is_some()),
            ("--bd-no-graph", self.bd_no_graph),
            ("--bd-no-bitmap", self.bd_no_bitmap),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_parse() {
        assert_eq!(cuts("none").unwrap(), Cuts(vec![]));
        assert_eq!(cuts("2,4,8").unwrap(), Cuts(vec![2, 4, 8]));
        assert!(cuts("4,2").is_err());
        assert!(cuts("0,2").is_err());
        assert!(cuts("x").is_err());
    }

    #[test]
    fn flags_set_the_options() {
        let args = BlockDependArgs {
            bd_uncompressed: true,
            bd_no_retire: true,
            bd_tile: Some(5),
            bd_cuts: Some(Cuts(vec![1, 3])),
            bd_placement: Some(PlacementArg::Global),
            bd_format: Some(FormatArg::Ell),
            bd_items: Some(ItemsArg::Predicated),
            bd_spread: Some(SpreadArg::Off),
            bd_grid_blocks: Some(9),
            bd_kernel_formats: Some(KernelFormatsArg::Every),
            bd_no_graph: true,
            bd_no_bitmap: true,
        };
        let mut set = OptionSet::default();
        args.apply(&mut set);
        let o: BlockDependOptions = set.get();
        assert_eq!(
            o,
            BlockDependOptions {
                compress: false,
                retire: false,
                tile_rows: Some(5),
                cuts: Some(vec![1, 3]),
                placement: PlacementChoice::Global,
                format: FormatChoice::Ell,
                items: ItemChoice::Predicated,
                spread: SpreadChoice::Off,
                grid_blocks: Some(9),
                kernel_formats: KernelFormats::Every,
                graph: false,
                input_bitmap: false,
            }
        );
        assert_eq!(args.given().len(), 12);
        let none = BlockDependArgs::default();
        let mut set = OptionSet::default();
        none.apply(&mut set);
        assert_eq!(
            set.get::<BlockDependOptions>(),
            BlockDependOptions::default()
        );
        let split = BlockDependArgs {
            bd_placement: Some(PlacementArg::Split),
            ..BlockDependArgs::default()
        };
        let mut set = OptionSet::default();
        split.apply(&mut set);
        assert_eq!(
            set.get::<BlockDependOptions>().placement,
            PlacementChoice::Split
        );
    }
}
