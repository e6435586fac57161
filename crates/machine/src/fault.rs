//! Protocol faults injected on purpose, so tests can show the protocol tester catches them. A
//! leaf module: protocol handlers consult it without importing the machine's environment.

/// Faults a protocol can be told to commit, so tests can show the tester catches them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Fault {
    #[default]
    None,
    /// Every `n`th invalidation is not sent (and counted as acknowledged).
    DropInvalidation { n: u32, count: u32 },
}

impl Fault {
    /// True when the protocol should drop this invalidation.
    pub fn drop_invalidation(&mut self) -> bool {
        if let Fault::DropInvalidation { n, count } = self {
            *count += 1;
            if *count >= *n {
                *count = 0;
                return true;
            }
        }
        false
    }
}
