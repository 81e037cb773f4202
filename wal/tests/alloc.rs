//! Guards the hot path: once warm, appending does not allocate per record (a counting global
//! allocator watches 20,000 appends on the real file system).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use statelog_wal::{Durability, RecordKind, Wal, WalOptions};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator, only counting calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn warm_appends_do_not_allocate_per_record() {
    let temp = tempfile::tempdir().expect("tempdir");
    let options = WalOptions {
        segment_size_bytes: 16 * 1024 * 1024,
        durability: Durability::NoSync,
        background_preparation: false,
        ..WalOptions::default()
    };
    let (wal, _) = Wal::open(temp.path(), options).expect("open");
    let kind = RecordKind::new(1).expect("kind");
    let payload = [7u8; 100];
    for _ in 0..1000 {
        wal.append(kind, &payload).expect("warm-up append");
    }
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let appends = 20_000u64;
    for _ in 0..appends {
        wal.append(kind, &payload).expect("append");
    }
    let allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;
    // Only the amortised growth of the sparse index (a few reallocations) is allowed.
    assert!(
        allocations * 100 < appends,
        "{allocations} allocations for {appends} appends"
    );
    println!("{allocations} allocations for {appends} appends");
}
