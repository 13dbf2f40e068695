//! The core's one registry of error codes: every code any engine raises, in one table, each with the engine
//! that raises it and the Python exception class it is raised as (docs/design.md §28, docs/errors.md).
//!
//! Naming scheme, shared by every engine: `<engine>.<reason>` for an error any operation can raise,
//! `<engine>.<operation>.<reason>` for one operation's own rule; all parts lower snake case. A code is the
//! contract; the message is for humans. Each engine's error type keeps its own typed view of its rows
//! ([`RecorderCode`], [`ContainmentCode`], [`DagCode`], [`StoreCode`]); [`Code`] is any row.

use std::fmt;

/// An exception class of docs/errors.md that carries a `.code`, with the class it derives from there.
macro_rules! classes {
    ($($(#[$doc:meta])* $variant:ident => $doc_text:literal;)+) => {
        /// The Python exception class a code is raised as; its name is the class's name in `chainwarden.errors`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Class {
            $($(#[$doc])* $variant,)+
        }

        impl Class {
            pub const ALL: &'static [Class] = &[$(Class::$variant,)+];

            pub const fn name(self) -> &'static str {
                match self {
                    $(Class::$variant => stringify!($variant),)+
                }
            }

            /// The class's docstring, for the classes the native module creates ("" for the Python layer's).
            pub const fn doc(self) -> &'static str {
                match self {
                    $(Class::$variant => $doc_text,)+
                }
            }
        }
    };
}

classes! {
    NotFound => "A key (a node, run, account or reservation id) names nothing that exists.";
    InvalidArgument =>
        "An argument has the right type but a bad value; `argument` names it (None: no single argument).";
    InvalidState => "The call is valid, but not in the state the object (or the current call) is in.";
    DagError => "A DAG operation failed; `.code` names what went wrong (e.g. `dag.edge.cycle`).";
    DagNotFoundError => "An unknown id, or an inactive node where an active one is required.";
    DagInvalidArgumentError => "An argument has the wrong type or value.";
    DagEdgeError => "An edge would break the graph's structure.";
    DagPreconditionError => "A mutation's documented precondition does not hold.";
    // The durable DAG store's family: defined and documented by the Python layer (`chainwarden.errors`).
    StoreError => "";
    StoreUrlError => "";
    StoreConnectionError => "";
    StoreCommitUnknownError => "";
    StoreSchemaError => "";
    StoreConflictError => "";
}

/// `codes! { Engine EngineCode { Variant = "code" => Class; ... } ... }` defines one typed enum per engine
/// (`ALL`, `as_str()`, `class()`), the union [`Code`] (`Code::ALL` is the whole table) and [`Engine`].
macro_rules! codes {
    ($($engine:ident $name:ident { $($(#[$doc:meta])* $variant:ident = $code:literal => $class:ident;)+ })+) => {
        $(
            #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
            pub enum $name {
                $($(#[$doc])* $variant,)+
            }

            impl $name {
                pub const ALL: &'static [$name] = &[$($name::$variant,)+];

                pub const fn as_str(self) -> &'static str {
                    match self {
                        $($name::$variant => $code,)+
                    }
                }

                pub const fn class(self) -> Class {
                    match self {
                        $($name::$variant => Class::$class,)+
                    }
                }
            }

            impl From<$name> for Code {
                fn from(c: $name) -> Code {
                    Code::$engine(c)
                }
            }

            impl fmt::Display for $name {
                fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str(self.as_str())
                }
            }

            /// Codes compare with their string form, so tests read like the contract.
            impl PartialEq<&str> for $name {
                fn eq(&self, other: &&str) -> bool {
                    self.as_str() == *other
                }
            }
        )+

        /// The part of the package that raises a code.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Engine {
            $($engine,)+
        }

        /// Any code of the registry.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Code {
            $($engine($name),)+
        }

        impl Code {
            /// The whole registry, engine by engine.
            pub const ALL: &'static [Code] = &[$($(Code::$engine($name::$variant),)+)+];

            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Code::$engine(c) => c.as_str(),)+
                }
            }

            pub const fn class(self) -> Class {
                match self {
                    $(Code::$engine(c) => c.class(),)+
                }
            }

            pub const fn engine(self) -> Engine {
                match self {
                    $(Code::$engine(_) => Engine::$engine,)+
                }
            }
        }

        impl Engine {
            pub const ALL: &'static [Engine] = &[$(Engine::$engine,)+];

            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Engine::$engine => stringify!($engine),)+
                }
            }
        }
    };
}

codes! {
    Recorder RecorderCode {
        /// `mark_*` / `increment_retries` / `node` on an id that is not (or no longer) in the graph.
        NodeNotFound = "recorder.node_not_found" => NotFound;
        ParentNotFound = "recorder.begin_node.parent_not_found" => NotFound;
        RootExists = "recorder.create_root.root_exists" => InvalidState;
        InvalidNumber = "recorder.invalid_number" => InvalidArgument;
        InvalidMetadata = "recorder.invalid_metadata" => InvalidArgument;
        InvalidSnapshot = "recorder.from_snapshot.invalid_snapshot" => InvalidArgument;
        InvalidArgument = "recorder.invalid_argument" => InvalidArgument;
    }
    Containment ContainmentCode {
        /// A call id that is not (or no longer) open in the chain.
        NotOpen = "containment.not_open" => NotFound;
        InvalidNumber = "containment.invalid_number" => InvalidArgument;
    }
    Dag DagCode {
        /// Unknown node id, or an inactive node where an active one is required.
        NodeNotFound = "dag.node_not_found" => DagNotFoundError;
        EdgeNotFound = "dag.edge_not_found" => DagNotFoundError;
        /// A wrong type or value: unknown vocabulary, a non-dict payload, an id already used, ...
        InvalidArgument = "dag.invalid_argument" => DagInvalidArgumentError;
        EdgeSelfLoop = "dag.edge.self_loop" => DagEdgeError;
        EdgeCycle = "dag.edge.cycle" => DagEdgeError;
        EdgeInactiveEndpoint = "dag.edge.inactive_endpoint" => DagEdgeError;
        ForkSourceInactive = "dag.fork.source_inactive" => DagPreconditionError;
        ForkSourceNotTerminal = "dag.fork.source_not_terminal" => DagPreconditionError;
        RetryNotRetriable = "dag.retry.not_retriable" => DagPreconditionError;
        RetryBadState = "dag.retry.bad_state" => DagPreconditionError;
        RetryDownstreamNotPending = "dag.retry.downstream_not_pending" => DagPreconditionError;
        RegenerateBadState = "dag.regenerate.bad_state" => DagPreconditionError;
        RegenerateNotLeaf = "dag.regenerate.not_leaf" => DagPreconditionError;
        EditBadState = "dag.edit.bad_state" => DagPreconditionError;
        EditDownstreamActive = "dag.edit.downstream_active" => DagPreconditionError;
        CompressAlreadyCompressed = "dag.compress.already_compressed" => DagPreconditionError;
        CompressNotFinished = "dag.compress.not_finished" => DagPreconditionError;
        CompressSummaryWouldBeLeaf = "dag.compress.summary_would_be_leaf" => DagPreconditionError;
        /// A result from a worker whose lease on the node was lost (reclaimed, or claimed by another).
        ClaimLeaseLost = "dag.claim.lease_lost" => DagPreconditionError;
        /// A stored graph id that the store does not hold (raised by `chainwarden.dag.Store`).
        GraphNotFound = "dag.graph_not_found" => DagNotFoundError;
    }
    Store StoreCode {
        /// Raised by the Python layer's durable store (docs/dag.md "Stores and workers"); listed here so every
        /// code has one home.
        BadUrl = "dag.store.bad_url" => StoreUrlError;
        Connection = "dag.store.connection" => StoreConnectionError;
        CommitUnknown = "dag.store.commit_unknown" => StoreCommitUnknownError;
        SchemaVersion = "dag.store.schema_version" => StoreSchemaError;
        GraphExists = "dag.store.graph_exists" => StoreConflictError;
    }
}

/// A family's base class and the code it carries as a class attribute (an error of the family whose
/// subclass is not known, e.g. `DagError("...")` built by hand).
pub const FAMILIES: &[(Class, &str)] = &[
    (Class::DagError, "dag.error"),
    (Class::StoreError, "dag.store.error"),
];

impl Class {
    /// The code the class carries as a class attribute: its family code, or its one code when exactly
    /// one row of the registry raises it.
    pub fn class_code(self) -> Option<&'static str> {
        if let Some(&(_, code)) = FAMILIES.iter().find(|(c, _)| *c == self) {
            return Some(code);
        }
        let mut codes = Code::ALL.iter().filter(|c| c.class() == self);
        match (codes.next(), codes.next()) {
            (Some(c), None) => Some(c.as_str()),
            _ => None,
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn well_formed(code: &str) -> bool {
        let parts: Vec<&str> = code.split('.').collect();
        (2..=3).contains(&parts.len())
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
    }

    /// Every code appears once in the whole registry (across engines) and follows the one naming scheme.
    #[test]
    fn every_code_is_unique_and_well_formed() {
        let mut seen = HashSet::new();
        for code in Code::ALL
            .iter()
            .map(|c| c.as_str())
            .chain(FAMILIES.iter().map(|f| f.1))
        {
            assert!(seen.insert(code), "{code} twice");
            assert!(well_formed(code), "{code}");
        }
        assert_eq!(seen.len(), Code::ALL.len() + FAMILIES.len());
    }

    /// A code's first part names its engine, so two engines never spell the same failure alike (the
    /// recorder's and the DAG's "node not found" are two rows, raised as two classes).
    #[test]
    fn each_code_is_prefixed_by_its_engine() {
        for &code in Code::ALL {
            let prefix = match code.engine() {
                Engine::Recorder => "recorder.",
                Engine::Containment => "containment.",
                Engine::Dag => "dag.",
                Engine::Store => "dag.store.",
            };
            assert!(code.as_str().starts_with(prefix), "{code}");
        }
        assert_ne!(
            Code::from(RecorderCode::NodeNotFound).class(),
            Code::from(DagCode::NodeNotFound).class()
        );
    }

    #[test]
    fn typed_views_are_the_table() {
        let views: usize = RecorderCode::ALL.len()
            + ContainmentCode::ALL.len()
            + DagCode::ALL.len()
            + StoreCode::ALL.len();
        assert_eq!(views, Code::ALL.len());
        assert!(DagCode::ALL
            .iter()
            .all(|&c| Code::from(c).engine() == Engine::Dag));
        assert_eq!(
            Code::from(DagCode::ClaimLeaseLost).as_str(),
            "dag.claim.lease_lost"
        );
    }

    /// Every class is raised by some code, or is a family base; a class's own code is unambiguous.
    #[test]
    fn every_class_is_used() {
        for &class in Class::ALL {
            let used = Code::ALL.iter().any(|c| c.class() == class)
                || FAMILIES.iter().any(|f| f.0 == class);
            assert!(used, "{}", class.name());
            // Documented here exactly when the native module creates the class.
            assert_eq!(class.doc().is_empty(), class.name().starts_with("Store"));
        }
        assert_eq!(Class::DagError.class_code(), Some("dag.error"));
        assert_eq!(
            Class::DagInvalidArgumentError.class_code(),
            Some("dag.invalid_argument")
        );
        assert_eq!(Class::DagNotFoundError.class_code(), None);
        assert_eq!(Class::StoreUrlError.class_code(), Some("dag.store.bad_url"));
    }
}
