//! Rows held back after the conversion for one post-convergence pass over several batches.
//!
//! A post-convergence pass costs about the same whatever its rows: on the challenge's
//! networks a batch keeps one or a few non-empty rows after the conversion, and the pass is
//! two launches a layer. Run in batches (a tight memory budget), each batch paid that pass
//! again. Instead, a batch's non-empty rows (its centroids and the rows with a non-empty
//! residue) are copied after its conversion into the slots of [`Held`], and the batch's
//! other rows are written down on the host as "the same as slot c" (an empty residue) or
//! "zero" (dead before the threshold layer). One pass over the slots, when the last batch
//! has run ([`spdnn_cuda::method::DeviceRun::finish`]) or when the slots are full, finishes
//! every held row. The rows' values are computed exactly as in their own batch's pass: a
//! row's outputs depend only on its inputs, whatever its slot, and a row equal to its
//! centroid is the centroid's.
//!
//! The slots are a share of the batch, [`HELD_SHARE`]: a batch whose non-empty rows do
//! not fit them (random networks, whose rows rarely equal a centroid) runs alone, as
//! before, once the rows held before it are finished.

use spdnn_cuda::method::Probe;
use spdnn_cuda::rows::{PingPong, RowList};
use spdnn_cuda::{CudaError, DeviceBuffer, DriverResultExt, Gpu, PushKernelArg};

use crate::run::{Clustered, Clusters, Context, Outcome, PostState, count_set, first_lists};

/// No slot (a row not held, or no match).
const NONE: u32 = u32::MAX;

/// Batch rows per held slot by default: a batch of `B` rows holds `⌈B / HELD_SHARE⌉` slots
/// ([`crate::SnicitOptions::held_share`]).
pub const HELD_SHARE: usize = 16;

/// The held slots of a batch of `rows` rows, `share` rows a slot.
pub fn held_slots(rows: usize, share: usize) -> usize {
    rows.div_ceil(share.max(1)).max(1)
}

/// Device bytes of the held slots for `capacity` rows of `width` values: the slots'
/// activations (two buffers), the live, dead and row-alive flags, the centroids' slots, the
/// two lists, the identity and the slots' flags; and what a batch's hold allocates for a
/// while (at most `capacity` each: the batch's centroids, the held centroid slots and their
/// matches, then its new rows and their centroids' slots).
pub fn held_bytes(capacity: usize, width: usize) -> usize {
    let capacity = capacity.max(1);
    2 * 4 * capacity * width.max(1)
        + 3 * capacity
        + 4 * capacity
        + 2 * RowList::bytes(capacity)
        + 4 * capacity
        + capacity
        + 5 * 4 * capacity
}

/// What a held row's result is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeldRow {
    /// The slot's own (a centroid or a row with a non-empty residue).
    Slot(u32),
    /// The same as this slot's, its centroid's (an empty residue).
    SameAs(u32),
    /// Zero: the row died before the threshold layer.
    Zero,
}

/// The slots of rows held back, and the rows of the batches held, in load order.
pub(crate) struct Held {
    capacity: usize,
    /// The slots' activations (`capacity` × the widest post-convergence width) and the
    /// other buffer of the pass.
    y: DeviceBuffer<f32>,
    y_other: DeviceBuffer<f32>,
    live: DeviceBuffer<u8>,
    dead: DeviceBuffer<u8>,
    row_alive: DeviceBuffer<u8>,
    centroid_of: DeviceBuffer<u32>,
    lists: PingPong<RowList>,
    /// `0..capacity`: the recovery writes each slot's flag at its own index.
    identity: DeviceBuffer<u32>,
    /// Each slot's category flag after a pass.
    slot_flags: DeviceBuffer<u8>,
    /// Slots filled.
    used: usize,
    /// The filled slots that are centroids (their own centroid), in order.
    centres: Vec<u32>,
    /// The rows of the batches held since the last pass.
    rows: Vec<HeldRow>,
}

/// Rows finished by one pass over held slots, with their results: downloaded when the
/// pass made room for more rows, else still in the slots (until the held rows are next
/// cleared).
pub(crate) struct HeldGroup {
    rows: Vec<HeldRow>,
    /// Slots the pass ran over.
    slots: usize,
    /// Each slot's category flag.
    flags: Option<Vec<u8>>,
    /// Each slot's final values (`slots` × `N_L`).
    values: Option<Vec<f32>>,
}

impl Held {
    /// Slots for `capacity` rows of at most `width` values.
    pub(crate) fn new(gpu: &Gpu, capacity: usize, width: usize) -> Result<Self, CudaError> {
        let capacity = capacity.max(1);
        let elements = capacity.checked_mul(width.max(1)).ok_or_else(|| {
            CudaError::InvalidArgument(format!("{capacity} held rows × {width} overflow"))
        })?;
        let identity: Vec<u32> = (0..capacity as u32).collect();
        Ok(Self {
            capacity,
            y: gpu.alloc_zeros(elements)?,
            y_other: gpu.alloc_zeros(elements)?,
            live: gpu.alloc_zeros(capacity)?,
            dead: gpu.alloc_zeros(capacity)?,
            row_alive: gpu.alloc_zeros(capacity)?,
            centroid_of: gpu.alloc_zeros(capacity)?,
            lists: PingPong::new(RowList::new(gpu, capacity)?, RowList::new(gpu, capacity)?),
            identity: gpu.upload(&identity)?,
            slot_flags: gpu.alloc_zeros(capacity)?,
            used: 0,
            centres: Vec::new(),
            rows: Vec::new(),
        })
    }

    /// Whether rows are held, unfinished.
    pub(crate) fn holds_rows(&self) -> bool {
        !self.rows.is_empty()
    }

    /// Frees the slots of the last pass (its group's results on the device are gone).
    pub(crate) fn clear(&mut self) {
        self.used = 0;
        self.centres.clear();
        self.rows.clear();
    }

    /// Holds a batch of `rows` rows none of which is alive at the threshold layer.
    pub(crate) fn hold_empty(&mut self, rows: usize) {
        self.rows.extend(std::iter::repeat_n(HeldRow::Zero, rows));
    }

    /// The results of the rows of `group`: each row's category flag and, with `values`,
    /// its final values (`N_L` = `width` each, in `to_original`'s order).
    fn expand<T: Copy + Default>(
        group: &HeldGroup,
        per_slot: &[T],
        width: usize,
        out: &mut Vec<T>,
    ) {
        for row in &group.rows {
            match *row {
                HeldRow::Slot(s) | HeldRow::SameAs(s) => {
                    let s = s as usize;
                    out.extend_from_slice(&per_slot[s * width..(s + 1) * width]);
                }
                HeldRow::Zero => out.extend(std::iter::repeat_n(T::default(), width)),
            }
        }
    }
}

impl Context<'_> {
    /// Holds back the non-empty rows of a converted batch of `rows` rows in `held`'s
    /// slots (after finishing the rows held so far when they do not fit beside them);
    /// returns how many, or `None` when they do not fit even empty slots: the rows held so
    /// far are then finished (into `finished`) and the batch runs alone. Waits for the
    /// device once (the conversion's flags). Passes over held rows count in `outcome`.
    pub(crate) fn hold(
        &mut self,
        held: &mut Held,
        clustered: &Clustered,
        rows: usize,
        finished: &mut Vec<HeldGroup>,
        outcome: &mut Outcome,
        probe: &mut Probe,
    ) -> Result<Option<usize>, CudaError> {
        let gpu = self.gpu;
        let live = gpu.download(&*clustered.live)?;
        let centroid_of = gpu.download(&*clustered.centroid_of)?;
        let listed: Vec<u32> = (0..live.len() as u32)
            .filter(|&j| live[j as usize] != 0)
            .collect();
        if listed.len() > held.capacity {
            self.finish_held_eagerly(held, finished, outcome, probe)?;
            return Ok(None);
        }
        // The batch's centroids equal to a centroid held before, at every position, take
        // its slot (rows of separate batches converge to the same rows).
        let centroids: Vec<u32> = listed
            .iter()
            .copied()
            .filter(|&j| centroid_of[j as usize] == j)
            .collect();
        let mut matches = self.match_held(held, clustered, &centroids)?;
        let unmatched =
            |matches: &[u32]| listed.len() - matches.iter().filter(|&&m| m != NONE).count();
        if held.used + unmatched(&matches) > held.capacity {
            // The slots are full: finish them, and the batch's rows start the next ones.
            self.finish_held_eagerly(held, finished, outcome, probe)?;
            matches = vec![NONE; centroids.len()];
        }
        // Each exported row's slot (listed rows only): a match's, or the next free one.
        let mut slot_of = vec![NONE; live.len()];
        for (&j, &m) in centroids.iter().zip(&matches) {
            slot_of[j as usize] = m;
        }
        outcome.held_matches += matches.iter().filter(|&&m| m != NONE).count();
        let new_rows: Vec<u32> = listed
            .iter()
            .copied()
            .filter(|&j| slot_of[j as usize] == NONE)
            .collect();
        let base = held.used;
        for (i, &j) in new_rows.iter().enumerate() {
            slot_of[j as usize] = (base + i) as u32;
        }
        let slot_of_centroid = |j: usize| -> Result<u32, CudaError> {
            let c = centroid_of[j] as usize;
            match slot_of.get(c) {
                Some(&slot) if slot != NONE => Ok(slot),
                _ => Err(CudaError::InvalidArgument(format!(
                    "SNICIT: exported row {j}'s centroid {c} is not a non-empty row"
                ))),
            }
        };
        let centres: Vec<u32> = new_rows
            .iter()
            .map(|&j| slot_of_centroid(j as usize))
            .collect::<Result<_, _>>()?;
        let mut batch_rows = vec![HeldRow::Zero; rows];
        for (j, &row) in clustered.ids.iter().enumerate() {
            let code = if live[j] != 0 {
                HeldRow::Slot(slot_of[j])
            } else {
                HeldRow::SameAs(slot_of_centroid(j)?)
            };
            *batch_rows.get_mut(row as usize).ok_or_else(|| {
                CudaError::InvalidArgument(format!("SNICIT: exported row {row} of {rows}"))
            })? = code;
        }
        if !new_rows.is_empty() {
            let (n_u32, base_u32) = (self.threshold_width() as u32, base as u32);
            let rows_on_device = gpu.upload(&new_rows)?;
            let centres_on_device = gpu.upload(&centres)?;
            let kernel = &self.kernels.hold_rows;
            let mut launch = gpu.stream().launch_builder(kernel);
            launch
                .arg(&*clustered.y)
                .arg(&n_u32)
                .arg(&*rows_on_device)
                .arg(&*centres_on_device)
                .arg(&base_u32)
                .arg(&mut *held.y)
                .arg(&mut *held.centroid_of)
                .arg(&mut *held.live)
                .arg(&mut *held.dead)
                .arg(&mut *held.row_alive);
            let config = kernel.config(new_rows.len() as u32)?;
            unsafe { launch.launch(config) }.context("launching snicit_hold_rows")?;
        }
        for (&j, &centre) in new_rows.iter().zip(&centres) {
            if slot_of[j as usize] == centre {
                held.centres.push(centre);
            }
        }
        held.used += new_rows.len();
        held.rows.extend(batch_rows);
        Ok(Some(listed.len()))
    }

    /// For each of the exported rows `candidates`, the held centroid slot whose row equals
    /// it at every position, or [`NONE`] (waits).
    fn match_held(
        &self,
        held: &Held,
        clustered: &Clustered,
        candidates: &[u32],
    ) -> Result<Vec<u32>, CudaError> {
        if candidates.is_empty() || held.centres.is_empty() {
            return Ok(vec![NONE; candidates.len()]);
        }
        let gpu = self.gpu;
        let candidates_on_device = gpu.upload(candidates)?;
        let centres_on_device = gpu.upload(&held.centres)?;
        let mut matches = gpu.alloc_zeros::<u32>(candidates.len())?;
        let (n_u32, centre_count) = (self.threshold_width() as u32, held.centres.len() as u32);
        let kernel = &self.kernels.match_held;
        let mut launch = gpu.stream().launch_builder(kernel);
        launch
            .arg(&*clustered.y)
            .arg(&n_u32)
            .arg(&*candidates_on_device)
            .arg(&*held.y)
            .arg(&*centres_on_device)
            .arg(&centre_count)
            .arg(&mut *matches);
        let config = kernel.config(candidates.len() as u32)?;
        unsafe { launch.launch(config) }.context("launching snicit_match_held")?;
        gpu.download(&*matches)
    }

    /// Finishes the rows held so far, when there are any, and downloads their results:
    /// the slots are then free. The pass counts in `outcome` (and, profiled, the slots
    /// still non-empty).
    pub(crate) fn finish_held_eagerly(
        &mut self,
        held: &mut Held,
        finished: &mut Vec<HeldGroup>,
        outcome: &mut Outcome,
        probe: &mut Probe,
    ) -> Result<(), CudaError> {
        if held.holds_rows() {
            let mut group = self.finish_held(held, outcome, probe)?;
            group.flags = Some(self.held_flags(held, &group)?);
            group.values = Some(self.held_values(held, &group)?);
            held.clear();
            finished.push(group);
        }
        Ok(())
    }

    /// Runs the post-convergence layers over the held slots and flags each slot's
    /// category on the device; the group's results stay in the slots. The pass counts in
    /// `outcome` (and, profiled, the slots still non-empty after it).
    pub(crate) fn finish_held(
        &mut self,
        held: &mut Held,
        outcome: &mut Outcome,
        probe: &mut Probe,
    ) -> Result<HeldGroup, CudaError> {
        let gpu = self.gpu;
        let stream = gpu.stream().clone();
        let used = held.used;
        if used > 0 {
            first_lists(gpu, &self.kernels, &mut held.lists, &held.live, used)?;
            self.post_layers(
                PostState {
                    y: &mut held.y,
                    y_other: &mut held.y_other,
                    lists: &mut held.lists,
                    row_alive: &mut held.row_alive,
                    centroid_of: &held.centroid_of,
                    live: &mut held.live,
                    dead: &mut held.dead,
                    recorder: None,
                    listed: used,
                },
                probe,
            )?;
            stream
                .memset_zeros(&mut *held.slot_flags)
                .context("clearing the held rows' flags")?;
            self.kernels.launch_recover(
                gpu,
                &held.row_alive,
                Clusters {
                    live: &held.live,
                    dead: &held.dead,
                    centroid_of: &held.centroid_of,
                },
                &held.identity,
                used,
                &mut held.slot_flags,
            )?;
        }
        probe.step(crate::STAGES[3])?;
        outcome.held_passes += 1;
        if probe.is_recording() {
            // Outside the timed stages: the slots still non-empty after the last layer.
            outcome.nonempty_at_end += self.held_nonempty(held)?;
        }
        Ok(HeldGroup {
            rows: std::mem::take(&mut held.rows),
            slots: used,
            flags: None,
            values: None,
        })
    }

    /// The slots still non-empty after the last pass (waits).
    fn held_nonempty(&self, held: &Held) -> Result<usize, CudaError> {
        if held.used == 0 {
            return Ok(0);
        }
        count_set(self.gpu, &held.live.slice(..held.used))
    }

    /// Each slot's category flag after the group's pass (its own, or the slots' on the
    /// device).
    fn held_flags(&self, held: &Held, group: &HeldGroup) -> Result<Vec<u8>, CudaError> {
        match &group.flags {
            Some(flags) => Ok(flags.clone()),
            None if group.slots == 0 => Ok(Vec::new()),
            None => self.gpu.download(&held.slot_flags.slice(..group.slots)),
        }
    }

    /// Each slot's final values after the group's pass, `slots` × `N_L`: the slot's own
    /// when live, its centroid's when its residue became empty, zeros when it died.
    fn held_values(&self, held: &mut Held, group: &HeldGroup) -> Result<Vec<f32>, CudaError> {
        if let Some(values) = &group.values {
            return Ok(values.clone());
        }
        let n = self.output_width();
        if group.slots == 0 || n == 0 {
            return Ok(Vec::new());
        }
        self.kernels.launch_recover_values(
            self.gpu,
            &held.y,
            n,
            Clusters {
                live: &held.live,
                dead: &held.dead,
                centroid_of: &held.centroid_of,
            },
            group.slots,
            &mut held.y_other,
        )?;
        self.gpu.download(&held.y_other.slice(..group.slots * n))
    }

    /// Each row's category flag of a finished group, in load order.
    pub(crate) fn held_row_flags(
        &self,
        held: &Held,
        group: &HeldGroup,
    ) -> Result<Vec<u8>, CudaError> {
        let per_slot = self.held_flags(held, group)?;
        let mut flags = Vec::with_capacity(group.rows.len());
        Held::expand(group, &per_slot, 1, &mut flags);
        Ok(flags)
    }

    /// The final values of a finished group's rows, rows × `N_L` in the network's neuron
    /// order.
    pub(crate) fn held_output(
        &self,
        held: &mut Held,
        group: &HeldGroup,
    ) -> Result<Vec<f32>, CudaError> {
        let n = self.output_width();
        let per_slot: Vec<f32> = self
            .held_values(held, group)?
            .chunks(n.max(1))
            .flat_map(|row| self.network.to_original(row))
            .collect();
        let mut out = Vec::with_capacity(group.rows.len() * n);
        Held::expand(group, &per_slot, n, &mut out);
        Ok(out)
    }
}
