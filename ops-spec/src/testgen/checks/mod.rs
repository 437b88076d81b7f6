//! One emitter per check of a kernel's module, each writing its check
//! functions (and their `#[test]`s) through [`Module`](super::write::Module),
//! in the order the module lists them.

pub(super) mod empty;
pub(super) mod examples;
pub(super) mod gradient;
pub(super) mod parity;
pub(super) mod registered;
pub(super) mod rejects;
pub(super) mod shape_rule;
pub(super) mod special;
