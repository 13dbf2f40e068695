//! The core's one vocabulary macro: a closed set of words (node kinds, statuses, DAG node types, states,
//! edge types) as a one-byte enum with its spelling, its list and a parser, so no vocabulary is written
//! out by hand twice.

/// A word outside a vocabulary; each engine turns it into its own error (the DAG's
/// `dag.invalid_argument`, the call graph's `ValueError` naming the argument).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unknown {
    /// What the vocabulary names ("node type", "kind").
    pub what: &'static str,
    /// Every accepted spelling, in order.
    pub expected: &'static [&'static str],
    pub got: String,
}

impl std::fmt::Display for Unknown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown {} {:?}", self.what, self.got)
    }
}

/// `vocab!(Name, "what", { Variant => "text", ... })` defines `enum Name` (`#[repr(u8)]`) with
/// `ALL`, `TEXTS`, `as_str()` and `parse() -> Result<Name, Unknown>`.
macro_rules! vocab {
    ($(#[$meta:meta])* $name:ident, $what:literal, { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: [$name; [$($text),+].len()] = [$($name::$variant),+];
            pub const TEXTS: &'static [&'static str] = &[$($text),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            pub fn parse(s: &str) -> Result<Self, $crate::vocab::Unknown> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err($crate::vocab::Unknown {
                        what: $what,
                        expected: Self::TEXTS,
                        got: s.to_owned(),
                    }),
                }
            }
        }
    };
}

pub(crate) use vocab;

#[cfg(test)]
mod tests {
    vocab!(Colour, "colour", { Red => "red", DarkBlue => "dark_blue" });

    #[test]
    fn spelling_list_and_parse_agree() {
        assert_eq!(Colour::ALL, [Colour::Red, Colour::DarkBlue]);
        for c in Colour::ALL {
            assert_eq!(Colour::parse(c.as_str()), Ok(c));
        }
        let err = Colour::parse("green").unwrap_err();
        assert_eq!(err.to_string(), "unknown colour \"green\"");
        assert_eq!(err.expected, ["red", "dark_blue"]);
        assert_eq!(std::mem::size_of::<Colour>(), 1);
    }
}
