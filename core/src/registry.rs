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

/// Declares a registry: a fieldless enum whose variants each have one name and one line
/// of help, with [`Named`], `ALL`, `name`, `about` and `Display` made from the list, so a
/// new member is one line and cannot be left out of any of them.
///
/// ```
/// nbody_core::registry! {
///     /// How a colour is mixed.
///     pub enum Mix as "mix" {
///         /// Additive.
///         Light => "light", "red, green and blue add up to white";
///         /// Subtractive.
///         Paint => "paint", "cyan, magenta and yellow add up to black";
///     }
/// }
/// use nbody_core::registry::{Named, lookup, names};
/// assert_eq!(lookup::<Mix>("paint"), Some(Mix::Paint));
/// assert_eq!((Mix::ALL.len(), Mix::Light.to_string()), (2, "light".to_string()));
/// assert_eq!(names::<Mix>(), "light, paint");
/// ```
#[macro_export]
macro_rules! registry {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident as $kind:literal {
            $($(#[$vmeta:meta])* $variant:ident => $text:literal, $about:literal;)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every member, in the order help lists them.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The one name every front end takes and prints.
            pub const fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// One line of help.
            pub const fn about(self) -> &'static str {
                match self {
                    $($name::$variant => $about,)+
                }
            }
        }

        impl $crate::registry::Named for $name {
            const KIND: &'static str = $kind;
            const ALL: &'static [Self] = $name::ALL;
            fn name(self) -> &'static str {
                $name::name(self)
            }
            fn about(self) -> &'static str {
                $name::about(self)
            }
        }

        impl ::core::fmt::Display for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}
