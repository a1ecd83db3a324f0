//! One spelling for each named concept. A registry is a closed set of values with one
//! name and a line of help each ([`Named`]); the command's values and help, the C ABI's
//! and Python's error messages and `nbody info` all read the same list, so a name cannot
//! drift between front ends.

/// A closed set of named values: softening kernels ([`crate::Softening`]), integrators,
/// precisions, gravity solvers.
///
/// ```
/// use nbody_core::registry::{Named, lookup, names};
/// use nbody_core::Softening;
/// assert_eq!(lookup::<Softening>("spline"), Some(Softening::Spline));
/// assert_eq!(names::<Softening>(), "plummer, spline");
/// ```
pub trait Named: Copy + PartialEq + 'static {
    /// What the set calls its members in messages, e.g. `"softening"`.
    const KIND: &'static str;
    /// Every value, in the order help lists them.
    const ALL: &'static [Self];
    /// The one name the front ends take and print.
    fn name(self) -> &'static str;
    /// One line of help.
    fn about(self) -> &'static str;
}

/// The value named `name`, if any.
pub fn lookup<K: Named>(name: &str) -> Option<K> {
    K::ALL.iter().copied().find(|k| k.name() == name)
}

/// Every name, comma-separated: what an error message offers.
#[cfg(feature = "alloc")]
pub fn names<K: Named>() -> alloc::string::String {
    let mut out = alloc::string::String::new();
    for (i, k) in K::ALL.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(k.name());
    }
    out
}
