//! completions: how many executions of each client have succeeded, told by the activity
//! worker that answered the last step (once its SendTaskSuccess is answered, the close it
//! decided is durable: the answer, the Task's exit and `ExecutionSucceeded` are one commit).
//! The `serve` Task workloads of benches/concurrency.rs and benches/cluster.rs wait on it
//! instead of polling DescribeExecution, which no client of a peer makes.

use std::time::Instant;

use parking_lot::{Condvar, Mutex};

/// Per client: its successes so far, and a condition woken at each.
pub struct Completions {
    by_client: Vec<(Mutex<u64>, Condvar)>,
}

impl Completions {
    /// No success yet for any of `clients_count` clients.
    pub fn new(clients_count: usize) -> Self {
        Self {
            by_client: (0..clients_count)
                .map(|_| (Mutex::new(0), Condvar::new()))
                .collect(),
        }
    }

    /// One more execution of client `client_index` succeeded.
    pub fn succeeded(&self, client_index: usize) {
        let (count, changed) = &self.by_client[client_index];
        *count.lock() += 1;
        changed.notify_one();
    }

    /// Waits until client `client_index` has `count` successes; false at `deadline`.
    pub fn wait(&self, client_index: usize, count: u64, deadline: Instant) -> bool {
        let (done, changed) = &self.by_client[client_index];
        let mut done = done.lock();
        while *done < count {
            if changed.wait_until(&mut done, deadline).timed_out() {
                return *done >= count;
            }
        }
        true
    }
}
