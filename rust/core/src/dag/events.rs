//! The append-only event log (audit and replay).

use std::sync::Arc;

use super::arena::Dag;
use super::types::State;
use crate::value::Value;

#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub event_type: String,
    pub subject_id: Arc<str>,
    pub particulars: Value,
    pub created_at: f64,
}

pub(crate) fn obj(pairs: Vec<(&str, Value)>) -> Value {
    Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

pub(crate) fn str_list<'a>(ids: impl IntoIterator<Item = &'a str>) -> Value {
    let mut v: Vec<&str> = ids.into_iter().collect();
    v.sort_unstable();
    Value::Array(v.into_iter().map(|s| Value::Str(s.to_owned())).collect())
}

impl Dag {
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    pub(crate) fn record(
        &mut self,
        event_type: &str,
        subject: &Arc<str>,
        particulars: Value,
        at: f64,
    ) {
        self.events.push(Event {
            event_type: event_type.to_owned(),
            subject_id: subject.clone(),
            particulars,
            created_at: at,
        });
    }

    pub(crate) fn record_state_change(&mut self, id: &Arc<str>, from: State, to: State, at: f64) {
        let p = obj(vec![
            ("from", Value::Str(from.as_str().into())),
            ("to", Value::Str(to.as_str().into())),
        ]);
        self.record("node_state_changed", id, p, at);
    }
}
