//! CPU reference inference: the oracle every GPU method is checked against. (being written)
