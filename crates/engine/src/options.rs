//! The options of a run: one group per options type (each method's, each modifier's),
//! each defaulting to its crate's defaults for this data folder.
//!
//! A group embedded in another (SNICIT's XY stage embeds `XyOptions`) follows the set's
//! own group of that type: editing `XyOptions` edits every embedded copy, and a group
//! taken from the set gets the set's `XyOptions` wherever it embeds one. So one flag
//! (`--delete-at`) reaches `xy` and SNICIT's XY stage alike, as it always has.

use std::any::{Any, TypeId};
use std::collections::BTreeMap;
use std::path::PathBuf;

use spdnn_cuda::method::MethodOptions;

/// A group of options behind a trait object.
trait Group: Any + Send + Sync + std::fmt::Debug {
    fn clone_group(&self) -> Box<dyn Group>;
    fn equals(&self, other: &dyn Group) -> bool;
    fn validate_group(&self) -> Result<(), String>;
    fn as_any(&self) -> &dyn Any;
    fn embedded(&mut self) -> Vec<&mut dyn Any>;
    fn type_name(&self) -> &'static str;
    /// Writes a copy of this group over `target` when it is of the same type.
    fn write_into(&self, target: &mut dyn Any);
}

impl<T: MethodOptions> Group for T {
    fn clone_group(&self) -> Box<dyn Group> {
        Box::new(self.clone())
    }
    fn equals(&self, other: &dyn Group) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
    fn validate_group(&self) -> Result<(), String> {
        self.validate()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn embedded(&mut self) -> Vec<&mut dyn Any> {
        self.embedded_mut()
    }
    fn type_name(&self) -> &'static str {
        std::any::type_name::<T>()
    }
    fn write_into(&self, target: &mut dyn Any) {
        if let Some(target) = target.downcast_mut::<T>() {
            *target = self.clone();
        }
    }
}

/// The options of a run, by type.
#[derive(Debug)]
pub struct OptionSet {
    /// Where the defaults put their caches (`MethodOptions::default_in`).
    data_dir: PathBuf,
    groups: BTreeMap<TypeId, Box<dyn Group>>,
}

impl Clone for OptionSet {
    fn clone(&self) -> Self {
        Self {
            data_dir: self.data_dir.clone(),
            groups: self
                .groups
                .iter()
                .map(|(id, g)| (*id, g.clone_group()))
                .collect(),
        }
    }
}

impl PartialEq for OptionSet {
    fn eq(&self, other: &Self) -> bool {
        self.data_dir == other.data_dir
            && self.groups.len() == other.groups.len()
            && self
                .groups
                .iter()
                .all(|(id, g)| other.groups.get(id).is_some_and(|o| g.equals(o.as_ref())))
    }
}

impl Default for OptionSet {
    /// Every group at its default for `spdnn_sdgc::paths::data_dir()`.
    fn default() -> Self {
        Self::new(spdnn_sdgc::paths::data_dir())
    }
}

impl OptionSet {
    /// Every group at its default for data under `data_dir`.
    pub fn new(data_dir: PathBuf) -> Self {
        Self {
            data_dir,
            groups: BTreeMap::new(),
        }
    }

    /// The options of type `T`: the set's group, or `T`'s default here; embedded groups
    /// follow the set's groups of their types.
    pub fn get<T: MethodOptions>(&self) -> T {
        let mut value = match self.groups.get(&TypeId::of::<T>()) {
            Some(group) => group
                .as_any()
                .downcast_ref::<T>()
                .cloned()
                .unwrap_or_else(|| T::default_in(&self.data_dir)),
            None => T::default_in(&self.data_dir),
        };
        self.sync_embedded(&mut value);
        value
    }

    /// Replaces the group of type `T` (and every embedded copy of it).
    pub fn set<T: MethodOptions>(&mut self, value: T) {
        self.edit::<T>(|options| *options = value.clone());
    }

    /// Edits the group of type `T` (taken from its default when absent) and every copy of
    /// it embedded in the set's other groups.
    pub fn edit<T: MethodOptions>(&mut self, mut change: impl FnMut(&mut T)) {
        let mut value = self.get::<T>();
        change(&mut value);
        for group in self.groups.values_mut() {
            for embedded in group.embedded() {
                if let Some(copy) = embedded.downcast_mut::<T>() {
                    change(copy);
                }
            }
        }
        self.groups.insert(TypeId::of::<T>(), Box::new(value));
    }

    /// Checks every group the set holds (the defaults are valid by construction).
    pub fn validate(&self) -> anyhow::Result<()> {
        for group in self.groups.values() {
            group.validate_group().map_err(anyhow::Error::msg)?;
        }
        Ok(())
    }

    /// The types of the groups `T` embeds (one level).
    pub fn embedded_types<T: MethodOptions>() -> Vec<TypeId> {
        let mut value = T::default();
        value
            .embedded_mut()
            .iter()
            .map(|e| (**e).type_id())
            .collect()
    }

    /// The names of the types of the groups the set holds (for messages and tests).
    pub fn group_names(&self) -> Vec<&'static str> {
        self.groups.values().map(|g| g.type_name()).collect()
    }

    fn sync_embedded(&self, value: &mut dyn Group) {
        for embedded in value.embedded() {
            let id = (*embedded).type_id();
            if let Some(group) = self.groups.get(&id) {
                group.write_into(embedded);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spdnn_snicit::SnicitOptions;
    use spdnn_xy::XyOptions;

    #[test]
    fn absent_groups_are_the_defaults_for_the_data_folder() {
        let set = OptionSet::new(PathBuf::from("/data"));
        let xy: XyOptions = set.get();
        assert_eq!(xy.cache_dir, Some(PathBuf::from("/data/cache/xy")));
        assert_eq!(xy.delete_at, Some(22));
        let snicit: SnicitOptions = set.get();
        assert_eq!(snicit.xy, xy);
        assert_eq!(snicit.threshold, 30);
        assert!(set.group_names().is_empty());
        set.validate().unwrap();
    }

    #[test]
    fn an_edited_group_reaches_every_embedded_copy_in_any_order() {
        for xy_first in [true, false] {
            let mut set = OptionSet::new(PathBuf::from("d"));
            let edit_xy = |set: &mut OptionSet| set.edit::<XyOptions>(|o| o.delete_at = None);
            let edit_snicit = |set: &mut OptionSet| set.edit::<SnicitOptions>(|o| o.threshold = 7);
            if xy_first {
                edit_xy(&mut set);
                edit_snicit(&mut set);
            } else {
                edit_snicit(&mut set);
                edit_xy(&mut set);
            }
            let snicit: SnicitOptions = set.get();
            assert_eq!((snicit.threshold, snicit.xy.delete_at), (7, None));
            assert_eq!(set.get::<XyOptions>().delete_at, None);
        }
    }

    #[test]
    fn validation_covers_every_group_and_equality_compares_them() {
        let mut set = OptionSet::new(PathBuf::from("d"));
        let copy = set.clone();
        assert_eq!(set, copy);
        set.edit::<SnicitOptions>(|o| o.bins = 0);
        assert_ne!(set, copy);
        let message = set.validate().unwrap_err().to_string();
        assert!(message.contains("bins"), "{message}");
        assert_eq!(
            OptionSet::embedded_types::<SnicitOptions>(),
            vec![TypeId::of::<XyOptions>()]
        );
        assert!(OptionSet::embedded_types::<XyOptions>().is_empty());
    }
}
