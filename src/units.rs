//! Physical units for a run (the command's `--units`, Python's `units=`): the units a
//! user's files, times and outputs are in. The integrators always run in N-body units (G = 1) with the user's length and
//! mass units; only time differs, by `scale = sqrt(G)` with G in the user's units: a
//! time t (user) is t x scale (model), a velocity v (user) is v / scale (model), an
//! energy E (model) is E x scale^2 (user).

/// A unit specification that could not be read: the message says what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnitsError(pub String);

macro_rules! bail {
    ($($t:tt)*) => { return Err(UnitsError(format!($($t)*))) };
}

/// The gravitational constant in cgs (CODATA 2018).
pub const G_CGS: f64 = 6.674_30e-8;

/// Lengths in cm: the astronomical unit (IAU 2012), the parsec, the solar radius (IAU
/// 2015 nominal), the light year (Julian).
const LENGTHS: [(&str, f64); 11] = [
    ("cm", 1.0),
    ("m", 1e2),
    ("km", 1e5),
    ("rearth", 6.3781e8),
    ("rsun", 6.957e10),
    ("au", 1.495_978_707e13),
    ("ly", 9.460_730_472_580_8e17),
    ("pc", 3.085_677_581_491_367e18),
    ("kpc", 3.085_677_581_491_367e21),
    ("mpc", 3.085_677_581_491_367e24),
    ("rjup", 7.1492e9),
];

/// Masses in g: the Sun, Earth and Jupiter from their nominal GM (IAU 2015) over G.
const MASSES: [(&str, f64); 5] =
    [("g", 1.0), ("kg", 1e3), ("mearth", 5.972_17e27), ("mjup", 1.898_13e30), ("msun", 1.988_41e33)];

/// Times in s: the Julian year and its multiples.
const TIMES: [(&str, f64); 9] = [
    ("s", 1.0),
    ("min", 60.0),
    ("h", 3600.0),
    ("day", 86_400.0),
    ("yr", 3.155_76e7),
    ("kyr", 3.155_76e10),
    ("myr", 3.155_76e13),
    ("gyr", 3.155_76e16),
    ("d", 86_400.0),
];

/// A run's units: N-body units (G = 1, the default), physical units (a length, a mass
/// and a time), or unnamed units in which G has a given value.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Units {
    /// G = 1 in whatever units the initial conditions meant.
    #[default]
    Nbody,
    /// Physical units: the spelling given, and each unit in cgs.
    Physical {
        /// As given (`au,msun,yr`).
        spec: String,
        /// Names of the length, mass and time units, for headers.
        names: [String; 3],
        /// The length unit in cm, the mass unit in g, the time unit in s.
        cgs: [f64; 3],
    },
    /// Units in which G has the value `g` (`G=39.478`).
    Gravity {
        /// G in these units.
        g: f64,
    },
}

/// `NUMBER?NAME` (`1e10msun`, `au`): the value of the unit in cgs.
fn quantity(text: &str, table: &[(&str, f64)], what: &str) -> Result<f64, UnitsError> {
    let lower = text.trim().to_ascii_lowercase();
    let split = lower.find(|c: char| c.is_ascii_alphabetic() && c != 'e').unwrap_or(lower.len());
    // A leading number may hold an exponent ("1e10msun"): split before the unit name.
    let (number, name) = lower.split_at(split);
    let factor = if number.is_empty() {
        1.0
    } else {
        number.parse::<f64>().map_err(|_| UnitsError(format!("--units: {text:?} is not a number and a {what} unit")))?
    };
    let Some(&(_, cgs)) = table.iter().find(|(n, _)| *n == name) else {
        let known: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
        bail!("--units: unknown {what} unit {name:?} in {text:?} (known: {})", known.join(", "));
    };
    if !(factor.is_finite() && factor > 0.0) {
        bail!("--units: the {what} unit {text:?} must be positive and finite");
    }
    Ok(factor * cgs)
}

impl Units {
    /// Parses `LENGTH,MASS,TIME` (each a unit name with an optional factor: `au,msun,yr`,
    /// `kpc,1e10msun,gyr`), `G=VALUE` (units in which G has that value), or `nbody`.
    ///
    /// ```
    /// use nbody::units::Units;
    /// let u = Units::parse("au,msun,yr").unwrap();
    /// assert!((u.g() - 4.0 * std::f64::consts::PI.powi(2)).abs() < 2e-3); // G = 4 pi^2 AU^3/(Msun yr^2)
    /// assert_eq!(Units::parse("G=2").unwrap().scale(), 2f64.sqrt());
    /// assert!(Units::parse("au,msun,fortnight").unwrap_err().to_string().contains("unknown time unit"));
    /// ```
    pub fn parse(text: &str) -> Result<Units, UnitsError> {
        let t = text.trim();
        if t.eq_ignore_ascii_case("nbody") {
            return Ok(Units::Nbody);
        }
        if let Some(v) = t.strip_prefix("G=").or_else(|| t.strip_prefix("g=")) {
            let g: f64 = v.trim().parse().map_err(|_| UnitsError(format!("--units G=VALUE: {v:?} is not a number")))?;
            if !(g.is_finite() && g > 0.0) {
                bail!("--units G=VALUE: G must be positive and finite (got {g})");
            }
            return Ok(Units::Gravity { g });
        }
        let parts: Vec<&str> = t.split(',').collect();
        let [l, m, s] = parts[..] else {
            bail!("--units takes LENGTH,MASS,TIME (such as au,msun,yr), G=VALUE or nbody (got {text:?})");
        };
        let cgs = [quantity(l, &LENGTHS, "length")?, quantity(m, &MASSES, "mass")?, quantity(s, &TIMES, "time")?];
        let names = [l, m, s].map(|p| p.trim().to_ascii_lowercase());
        Ok(Units::Physical { spec: names.join(","), names, cgs })
    }

    /// G in these units.
    pub fn g(&self) -> f64 {
        match self {
            Units::Nbody => 1.0,
            Units::Gravity { g } => *g,
            Units::Physical { cgs: [l, m, t], .. } => G_CGS * m * t * t / (l * l * l),
        }
    }

    /// sqrt(G): a time in these units times it is a time in the model's (N-body) units.
    pub fn scale(&self) -> f64 {
        self.g().sqrt()
    }

    /// Whether these are N-body units (nothing to convert).
    pub fn is_nbody(&self) -> bool {
        *self == Units::Nbody
    }

    /// The length, mass and velocity units in cgs (Gadget's unit attributes), for
    /// physical units.
    pub fn gadget(&self) -> Option<[f64; 3]> {
        match self {
            Units::Physical { cgs: [l, m, t], .. } => Some([*l, *m, l / t]),
            _ => None,
        }
    }

    /// Unit labels for the energy table's header: time, energy, momentum, angular
    /// momentum (empty for N-body units).
    pub fn labels(&self) -> [String; 4] {
        match self {
            Units::Nbody => Default::default(),
            Units::Gravity { g } => {
                let u = format!(" [units with G = {g}]");
                [u.clone(), u.clone(), u.clone(), u]
            }
            Units::Physical { names: [l, m, t], .. } => [
                format!(" [{t}]"),
                format!(" [{m} {l}^2/{t}^2]"),
                format!(" [{m} {l}/{t}]"),
                format!(" [{m} {l}^2/{t}]"),
            ],
        }
    }

    /// How the settings spell them.
    pub fn spec(&self) -> String {
        match self {
            Units::Nbody => "nbody".into(),
            Units::Gravity { g } => format!("G={g}"),
            Units::Physical { spec, .. } => spec.clone(),
        }
    }
}

#[cfg(feature = "cli")]
impl serde::Serialize for Units {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.spec())
    }
}

#[cfg(feature = "cli")]
impl<'de> serde::Deserialize<'de> for Units {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Units, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(d)?;
        Units::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn physical_units_give_the_known_constants() {
        // G in kpc, 1e10 Msun, Gyr: 4.49e4 (GADGET's usual system in Gyr).
        let g = Units::parse("kpc,1e10msun,gyr").unwrap().g();
        assert!((g / 4.498e4 - 1.0).abs() < 1e-3, "{g}");
        // SI: G itself.
        assert!((Units::parse("m,kg,s").unwrap().g() / 6.6743e-11 - 1.0).abs() < 1e-12);
        let u = Units::parse(" AU, Msun , yr").unwrap();
        assert_eq!(u.spec(), "au,msun,yr");
        assert_eq!(Units::parse(&u.spec()).unwrap(), u);
        let [l, m, v] = u.gadget().unwrap();
        assert_eq!((l, m), (1.495_978_707e13, 1.988_41e33));
        assert!((v / 4.74e5 - 1.0).abs() < 1e-3, "AU/yr is 4.74 km/s: {v}");
    }

    #[test]
    fn bad_units_say_what_is_wrong() {
        for (text, says) in [
            ("au,msun", "LENGTH,MASS,TIME"),
            ("parsec,msun,yr", "unknown length unit \"parsec\""),
            ("au,-1msun,yr", "positive and finite"),
            ("au,xmsun,yr", "unknown mass unit"),
            ("au,0msun,yr", "positive and finite"),
            ("G=-1", "positive and finite"),
            ("G=x", "not a number"),
        ] {
            let e = Units::parse(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
