//! Typed binding arguments that carry their name: each type converts one Python argument and, when it
//! is the wrong type or value, raises its engine's error whose message starts with the argument's
//! name, before the engine is touched. The name is a type parameter (`Text<name::NodeId>`) because
//! PyO3 does not pass the argument's name to `FromPyObject`. Each engine declares its names and
//! types with the two macros here (`dag/args.rs`, `recorder/args.rs`).

/// An argument's name, as the caller wrote it.
pub trait ArgName {
    const NAME: &'static str;
}

/// `arg_names! { NodeId = "node_id", ... }`: one uninhabited marker type per argument name.
macro_rules! arg_names {
    ($($ty:ident = $name:literal),* $(,)?) => {
        $(
            pub enum $ty {}
            impl $crate::args::ArgName for $ty {
                const NAME: &'static str = $name;
            }
        )*
    };
}

/// Implements `FromPyObject` for a `Wrapper<A>` from a function of the object and the argument's name.
macro_rules! typed_arg {
    ($(#[$doc:meta])* $ty:ident($inner:ty) $(, const $c:ident: $ct:ty)? => $conv:expr) => {
        $(#[$doc])*
        pub struct $ty<A: $crate::args::ArgName $(, const $c: $ct)?>(
            pub $inner,
            ::std::marker::PhantomData<A>,
        );

        impl<'a, 'py, A: $crate::args::ArgName $(, const $c: $ct)?> ::pyo3::FromPyObject<'a, 'py>
            for $ty<A $(, $c)?>
        {
            type Error = ::pyo3::PyErr;

            fn extract(obj: ::pyo3::Borrowed<'a, 'py, ::pyo3::PyAny>) -> ::pyo3::PyResult<Self> {
                let f: fn(&::pyo3::Bound<'py, ::pyo3::PyAny>, &'static str $(, $ct)?)
                    -> ::pyo3::PyResult<$inner> = $conv;
                f(&obj, <A as $crate::args::ArgName>::NAME $(, $c)?)
                    .map(|v| $ty(v, ::std::marker::PhantomData))
            }
        }
    };
}

pub(crate) use {arg_names, typed_arg};
