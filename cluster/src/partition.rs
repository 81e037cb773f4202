//! partition: which partition an execution or an SWF run lives in. This mapping is a format:
//! changing a byte of it moves every execution to another partition, so it is pinned by golden
//! values in the tests below and in `docs/cluster-ownership.md`.
//!
//! The key of an item is a byte string: one kind byte, then each part as its length (u32,
//! little-endian) followed by its UTF-8 bytes. Length prefixes make the parts unambiguous
//! (`("ab", "c")` and `("a", "bc")` are different keys); the kind byte keeps a Step Functions
//! execution and an SWF run with the same three strings apart. The partition is
//! `fnv1a_64(key) % count`.
//!
//! Invariants: the answer is below `count`; it depends only on the parts and `count`.
//! Must not: depend on the platform, the process, or a seed (every node must agree).

use crate::error::Error;
use crate::limits::PARTITIONS_MAX;

/// The kind byte of a Step Functions execution key.
const KIND_EXECUTION: u8 = 1;

/// The kind byte of an SWF workflow run key.
const KIND_SWF_RUN: u8 = 2;

/// FNV-1a 64's offset basis.
const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a 64's prime.
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// A partition's index, below the cluster's partition count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PartitionIndex(pub u32);

impl std::fmt::Display for PartitionIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "p{}", self.0)
    }
}

/// FNV-1a, 64 bits, over `bytes` continuing from `state`.
fn fnv1a_64_continue(mut state: u64, bytes: &[u8]) -> u64 {
    for &byte in bytes {
        state ^= u64::from(byte);
        state = state.wrapping_mul(FNV_PRIME);
    }
    state
}

/// FNV-1a, 64 bits.
pub fn fnv1a_64(bytes: &[u8]) -> u64 {
    fnv1a_64_continue(FNV_OFFSET_BASIS, bytes)
}

/// The hash of a key made of `kind` and length-prefixed `parts`, without building the key.
fn key_hash(kind: u8, parts: &[&str]) -> Result<u64, Error> {
    let mut state = fnv1a_64_continue(FNV_OFFSET_BASIS, &[kind]);
    for part in parts {
        let length = u32::try_from(part.len()).map_err(|_| Error::KeyPartTooLong {
            length_bytes: part.len(),
        })?;
        state = fnv1a_64_continue(state, &length.to_le_bytes());
        state = fnv1a_64_continue(state, part.as_bytes());
    }
    Ok(state)
}

/// Checks a partition count: 1..=[`PARTITIONS_MAX`].
pub fn check_count(count: u32) -> Result<(), Error> {
    if count == 0 || count > PARTITIONS_MAX {
        return Err(Error::PartitionCount {
            count,
            max: PARTITIONS_MAX,
        });
    }
    Ok(())
}

fn partition_of(kind: u8, parts: &[&str], count: u32) -> Result<PartitionIndex, Error> {
    check_count(count)?;
    let index = key_hash(kind, parts)? % u64::from(count);
    let index = u32::try_from(index).expect("a remainder of a u32 divisor fits a u32");
    assert!(index < count);
    Ok(PartitionIndex(index))
}

/// The partition of the Step Functions execution `execution_name` of state machine
/// `machine_name` in `account`, among `count` partitions.
pub fn partition_of_execution(
    account: &str,
    machine_name: &str,
    execution_name: &str,
    count: u32,
) -> Result<PartitionIndex, Error> {
    partition_of(
        KIND_EXECUTION,
        &[account, machine_name, execution_name],
        count,
    )
}

/// The partition of the SWF workflow `workflow_id` in `domain` of `account`, among `count`
/// partitions. Every run of one workflow id lands in the same partition.
pub fn partition_of_swf_run(
    account: &str,
    domain: &str,
    workflow_id: &str,
    count: u32,
) -> Result<PartitionIndex, Error> {
    partition_of(KIND_SWF_RUN, &[account, domain, workflow_id], count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The published FNV-1a 64 test vectors (Fowler/Noll/Vo), so the hash is the standard one.
    #[test]
    fn fnv1a_64_matches_the_published_vectors() {
        assert_eq!(fnv1a_64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a_64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a_64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    /// The hash over parts equals the hash of the documented byte encoding.
    #[test]
    fn the_key_is_kind_then_length_prefixed_parts() {
        let mut key = vec![KIND_EXECUTION];
        for part in ["123456789012", "orders", "run-1"] {
            key.extend_from_slice(&u32::try_from(part.len()).expect("short").to_le_bytes());
            key.extend_from_slice(part.as_bytes());
        }
        assert_eq!(
            key_hash(KIND_EXECUTION, &["123456789012", "orders", "run-1"]).expect("hashes"),
            fnv1a_64(&key)
        );
    }

    /// Golden values: the mapping is a format. If this test fails the change moves every
    /// execution of every cluster; do not update the values, revert the change.
    #[test]
    fn golden_partitions() {
        let hash = key_hash(KIND_EXECUTION, &["123456789012", "orders", "run-1"]).expect("ok");
        assert_eq!(hash, GOLDEN_EXECUTION_HASH);
        let hash = key_hash(KIND_SWF_RUN, &["123456789012", "shop", "order-17"]).expect("ok");
        assert_eq!(hash, GOLDEN_SWF_HASH);
        for (account, machine, execution, count, expected) in GOLDEN_EXECUTIONS {
            assert_eq!(
                partition_of_execution(account, machine, execution, count).expect("ok"),
                PartitionIndex(expected),
                "{account}/{machine}/{execution} among {count}"
            );
        }
        for (account, domain, workflow, count, expected) in GOLDEN_SWF_RUNS {
            assert_eq!(
                partition_of_swf_run(account, domain, workflow, count).expect("ok"),
                PartitionIndex(expected),
                "{account}/{domain}/{workflow} among {count}"
            );
        }
    }

    // Computed by a separate Python FNV-1a over the documented encoding, not by this code.
    const GOLDEN_EXECUTION_HASH: u64 = 0x3cde_3f9b_ccab_b927;
    const GOLDEN_SWF_HASH: u64 = 0x3bad_c581_e8c9_aaac;
    const GOLDEN_EXECUTIONS: [(&str, &str, &str, u32, u32); 4] = [
        ("123456789012", "orders", "run-1", 16, 7),
        ("123456789012", "orders", "run-2", 16, 10),
        ("000000000000", "m", "e", 1_024, 640),
        ("123456789012", "orders", "run-1", 1, 0),
    ];
    const GOLDEN_SWF_RUNS: [(&str, &str, &str, u32, u32); 2] = [
        ("123456789012", "shop", "order-17", 16, 12),
        ("123456789012", "shop", "order-18", 7, 5),
    ];

    #[test]
    fn parts_are_unambiguous() {
        let left = key_hash(KIND_EXECUTION, &["ab", "c", "d"]).expect("ok");
        let right = key_hash(KIND_EXECUTION, &["a", "bc", "d"]).expect("ok");
        assert_ne!(left, right);
        let execution = key_hash(KIND_EXECUTION, &["a", "b", "c"]).expect("ok");
        let run = key_hash(KIND_SWF_RUN, &["a", "b", "c"]).expect("ok");
        assert_ne!(execution, run);
    }

    #[test]
    fn counts_outside_the_range_are_refused() {
        for count in [0, PARTITIONS_MAX + 1] {
            match partition_of_execution("a", "m", "e", count) {
                Err(Error::PartitionCount { count: got, max }) => {
                    assert_eq!(got, count);
                    assert_eq!(max, PARTITIONS_MAX);
                }
                other => panic!("count {count}: {other:?}"),
            }
        }
        assert!(partition_of_swf_run("a", "d", "w", PARTITIONS_MAX).is_ok());
    }

    /// Names spread over the partitions: 4,096 execution names over 16 partitions put at
    /// least 128 in each (an even share is 256), so no partition is starved or a hot spot.
    #[test]
    fn names_spread_over_partitions() {
        let mut counts = [0_u32; 16];
        for index in 0..4_096 {
            let name = format!("execution-{index}");
            let partition =
                partition_of_execution("123456789012", "orders", &name, 16).expect("in range");
            counts[partition.0 as usize] += 1;
        }
        assert!(counts.iter().all(|&count| count >= 128), "{counts:?}");
    }
}
