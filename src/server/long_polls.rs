//! long_polls: the permits a long poll (`GetActivityTask`, SWF `PollForActivityTask`) holds
//! while it waits. There are two bounds: [`LONG_POLLS_CONCURRENT_MAX`] for the whole server
//! and [`LONG_POLLS_PER_ACCOUNT_MAX`] for each account. The account bound is below the server's,
//! so one account that holds all its polls still leaves room for others.
//!
//! Invariants: a permit counts once in the server pool and once in its account's count, and
//! gives both back when dropped; an account with no poll in flight has no entry (the map holds
//! at most [`LONG_POLLS_CONCURRENT_MAX`] entries). Must not: wait for a permit (a poll over a
//! bound is refused at once, so it never ties up a connection in a queue).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::error::Error;
use super::limits::{LONG_POLLS_CONCURRENT_MAX, LONG_POLLS_PER_ACCOUNT_MAX};

/// Why a long poll was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The server already holds [`LONG_POLLS_CONCURRENT_MAX`] polls.
    Server,
    /// The caller's account already holds [`LONG_POLLS_PER_ACCOUNT_MAX`] polls.
    Account,
}

/// The long-poll permits of a server: one pool, and a count per account.
#[derive(Debug)]
pub struct LongPolls {
    /// The server-wide pool, [`LONG_POLLS_CONCURRENT_MAX`] permits.
    pub server: Arc<Semaphore>,
    /// Polls in flight per account id (only accounts with at least one).
    accounts: Arc<Mutex<HashMap<String, usize>>>,
}

impl Default for LongPolls {
    fn default() -> Self {
        Self {
            server: Arc::new(Semaphore::new(LONG_POLLS_CONCURRENT_MAX)),
            accounts: Arc::default(),
        }
    }
}

/// One long poll in flight; dropping it gives its permits back.
#[derive(Debug)]
pub struct LongPollPermit {
    _server: OwnedSemaphorePermit,
    account_id: String,
    accounts: Arc<Mutex<HashMap<String, usize>>>,
}

impl LongPolls {
    /// Takes a permit for one poll of `account_id`, or says which bound refuses it. The
    /// account's own bound is checked first: an account over its share is told so even when
    /// the server is full too.
    pub fn try_acquire(&self, account_id: &str) -> Result<LongPollPermit, Refusal> {
        let mut accounts = self.accounts.lock();
        let held = accounts.get(account_id).copied().unwrap_or(0);
        assert!(
            held <= LONG_POLLS_PER_ACCOUNT_MAX,
            "an account never passes its share"
        );
        if held == LONG_POLLS_PER_ACCOUNT_MAX {
            return Err(Refusal::Account);
        }
        let Ok(server) = self.server.clone().try_acquire_owned() else {
            return Err(Refusal::Server);
        };
        accounts.insert(account_id.to_owned(), held + 1);
        debug_assert!(accounts.len() <= LONG_POLLS_CONCURRENT_MAX);
        Ok(LongPollPermit {
            _server: server,
            account_id: account_id.to_owned(),
            accounts: self.accounts.clone(),
        })
    }

    /// [`LongPolls::try_acquire`] with the refusal as the API answers it: the server's bound
    /// is `ThrottlingException`, the account's `ActivityWorkerLimitExceeded` (SWF turns it into
    /// `LimitExceededFault`).
    pub fn admit(&self, account_id: &str) -> Result<LongPollPermit, Error> {
        self.try_acquire(account_id)
            .map_err(|refusal| match refusal {
                Refusal::Server => Error::TooManyLongPolls {
                    limit: LONG_POLLS_CONCURRENT_MAX,
                },
                Refusal::Account => Error::AccountLongPollsExceeded {
                    limit: LONG_POLLS_PER_ACCOUNT_MAX,
                },
            })
    }

    /// How many polls `account_id` holds now.
    pub fn held_by(&self, account_id: &str) -> usize {
        self.accounts.lock().get(account_id).copied().unwrap_or(0)
    }
}

impl Drop for LongPollPermit {
    fn drop(&mut self) {
        let mut accounts = self.accounts.lock();
        let Some(held) = accounts.get_mut(&self.account_id) else {
            unreachable!("a permit's account has an entry while the permit lives");
        };
        assert!(*held > 0, "a live permit is counted");
        *held -= 1;
        if *held == 0 {
            accounts.remove(&self.account_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_account_at_its_share_is_refused_while_another_is_served() {
        let polls = LongPolls::default();
        let held: Vec<_> = (0..LONG_POLLS_PER_ACCOUNT_MAX)
            .map(|_| polls.try_acquire("111111111111").expect("within the share"))
            .collect();
        assert_eq!(
            polls.try_acquire("111111111111").err(),
            Some(Refusal::Account)
        );
        let other = polls
            .try_acquire("222222222222")
            .expect("another account's share");
        assert_eq!(polls.held_by("111111111111"), LONG_POLLS_PER_ACCOUNT_MAX);
        drop(held);
        drop(other);
        assert_eq!(polls.held_by("111111111111"), 0);
        assert!(
            polls.accounts.lock().is_empty(),
            "idle accounts leave no entry"
        );
        assert_eq!(polls.server.available_permits(), LONG_POLLS_CONCURRENT_MAX);
    }

    #[test]
    fn a_full_server_refuses_an_account_within_its_share() {
        let polls = LongPolls::default();
        let all = polls
            .server
            .clone()
            .try_acquire_many_owned(u32::try_from(LONG_POLLS_CONCURRENT_MAX).expect("fits"))
            .expect("free");
        assert_eq!(
            polls.try_acquire("111111111111").err(),
            Some(Refusal::Server)
        );
        assert_eq!(polls.held_by("111111111111"), 0, "a refusal holds nothing");
        drop(all);
        assert!(polls.try_acquire("111111111111").is_ok());
    }
}
