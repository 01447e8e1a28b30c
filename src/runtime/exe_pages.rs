//! The executable's clean pages given back to the kernel (issue 49: the idle process's resident
//! memory is mostly pages of its own binary, most of which ran once, at start-up).
//!
//! - A mapping of the file's bytes (no private page) is unmapped from this process,
//!   `MADV_DONTNEED`, which any process may do: the pages stay in the page cache, moved to its
//!   inactive list first (`MADV_COLD`) so that they are the first reclaimed and leave the
//!   cgroup's working set, and whatever runs again is mapped back from there as it runs.
//! - A read-only mapping with copy-on-write pages (the loader's relocations under RELRO, a
//!   debugger's breakpoint, a uprobe) would lose them if unmapped: it gets `MADV_PAGEOUT` only,
//!   which reclaims pages outright when the process owns the file or holds `CAP_FOWNER` (the
//!   kernel's `can_do_file_pageout`) and otherwise returns success and does nothing.
//!
//! The file's bytes are not paged out, even where the kernel would allow it (a process run as
//! the file's owner): the Pod may not (its binary is root's, it runs as 65532 with every
//! capability dropped), and where it was done the code that runs again, the idle process's
//! watch events and timers, was read back from disk after each give-back (measured as root:
//! docs/benchmarks.md, "The idle process").
//!
//! Writable mappings (relocated data, `.bss`) are never touched. Linux only; on a kernel
//! without `MADV_PAGEOUT` or `MADV_COLD` (before 5.4) that step fails and the next goes on.

/// One of the executable's mappings, as `/proc/self/smaps` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mapping {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) writable: bool,
    /// Resident, in KiB.
    pub(crate) rss_kib: u64,
    /// Private (copy-on-write) pages, in KiB.
    pub(crate) anonymous_kib: u64,
}

/// What a mapping is given back by, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Advice {
    PageOut,
    Cold,
    DontNeed,
}

impl Advice {
    fn flag(self) -> libc::c_int {
        match self {
            Advice::PageOut => libc::MADV_PAGEOUT,
            Advice::Cold => libc::MADV_COLD,
            Advice::DontNeed => libc::MADV_DONTNEED,
        }
    }
}

/// The advice a mapping gets: none when writable; reclaim only when it holds private pages,
/// which unmapping would lose; deactivate and unmap when it is the file's bytes.
pub(crate) fn advice_for(mapping: &Mapping) -> &'static [Advice] {
    if mapping.writable {
        &[]
    } else if mapping.anonymous_kib > 0 {
        &[Advice::PageOut]
    } else {
        &[Advice::Cold, Advice::DontNeed]
    }
}

/// What giving back did: the executable's read-only mappings' resident KiB before and after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GivenBack {
    pub before_kib: u64,
    pub after_kib: u64,
}

/// Gives the executable's clean pages back to the kernel (above); `None` when
/// `/proc/self/exe` or `/proc/self/smaps` cannot be read.
pub fn give_back() -> Option<GivenBack> {
    let exe = std::fs::read_link("/proc/self/exe").ok()?;
    let exe = exe.to_string_lossy();
    let read_only = |smaps: &str| -> Vec<Mapping> {
        mappings_of(smaps, &exe)
            .into_iter()
            .filter(|m| !m.writable)
            .collect()
    };
    // One buffer for both readings, sized for the controller's smaps (49 to 53 KB measured at
    // 400 repositories): grown from empty, the first reading reallocated it a dozen times.
    let mut smaps = String::with_capacity(SMAPS_CAPACITY);
    read_smaps(&mut smaps)?;
    let mappings = read_only(&smaps);
    for mapping in &mappings {
        for advice in advice_for(mapping) {
            advise(mapping.start, mapping.end, *advice);
        }
    }
    read_smaps(&mut smaps)?;
    let after = read_only(&smaps);
    Some(GivenBack {
        before_kib: mappings.iter().map(|m| m.rss_kib).sum(),
        after_kib: after.iter().map(|m| m.rss_kib).sum(),
    })
}

/// What the buffer for `/proc/self/smaps` starts with.
const SMAPS_CAPACITY: usize = 128 * 1024;

/// Reads `/proc/self/smaps` into `into`, replacing what it held.
fn read_smaps(into: &mut String) -> Option<()> {
    use std::io::Read;
    into.clear();
    std::fs::File::open("/proc/self/smaps")
        .and_then(|mut file| file.read_to_string(into))
        .ok()
        .map(drop)
}

/// Applies one advice to `start..end`; whether the kernel accepted it.
pub(crate) fn advise(start: usize, end: usize, advice: Advice) -> bool {
    // SAFETY: the range is a whole read-only mapping of this process, as the kernel described
    // it: PAGEOUT and COLD only move its pages between lists, and DONTNEED is only given a
    // mapping with no private page, whose pages are the file's bytes and read back from the
    // page cache or the file unchanged on the next access. No content changes.
    unsafe { libc::madvise(start as *mut libc::c_void, end - start, advice.flag()) == 0 }
}

/// The mappings of the file `exe` in a `/proc/<pid>/smaps` text.
pub(crate) fn mappings_of(smaps: &str, exe: &str) -> Vec<Mapping> {
    let mut found = Vec::new();
    let mut current: Option<Mapping> = None;
    for line in smaps.lines() {
        if let Some((start, end, perms, path)) = header(line) {
            found.extend(current.take());
            if path == exe {
                current = Some(Mapping {
                    start,
                    end,
                    writable: perms.as_bytes().get(1) == Some(&b'w'),
                    rss_kib: 0,
                    anonymous_kib: 0,
                });
            }
        } else if let Some(mapping) = current.as_mut() {
            if let Some(kib) = field_kib(line, "Rss:") {
                mapping.rss_kib = kib;
            } else if let Some(kib) = field_kib(line, "Anonymous:") {
                mapping.anonymous_kib = kib;
            }
        }
    }
    found.extend(current);
    found
}

/// A mapping's header line: `start-end perms offset dev inode path`, the path last and free
/// to hold spaces.
fn header(line: &str) -> Option<(usize, usize, &str, &str)> {
    let mut rest = line;
    let mut fields = [""; 5];
    for field in &mut fields {
        rest = rest.trim_start_matches(' ');
        let end = rest.find(' ').unwrap_or(rest.len());
        (*field, rest) = rest.split_at(end);
    }
    let (start, end) = fields[0].split_once('-')?;
    let start = usize::from_str_radix(start, 16).ok()?;
    let end = usize::from_str_radix(end, 16).ok()?;
    (fields[1].len() == 4 && start < end).then_some((start, end, fields[1], rest.trim_start()))
}

/// The value of a `Name:   123 kB` line named `name`.
fn field_kib(line: &str, name: &str) -> Option<u64> {
    line.strip_prefix(name)?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const SMAPS: &str = "\
55d0c0000000-55d0c0200000 r--p 00000000 fe:01 1234                       /usr/local/bin/image reflector
Rss:                 512 kB
Anonymous:             0 kB
VmFlags: rd mr mw me dw
55d0c0200000-55d0c1400000 r-xp 00200000 fe:01 1234                       /usr/local/bin/image reflector
Size:              18432 kB
Rss:               10800 kB
Anonymous:             0 kB
55d0c1400000-55d0c1500000 r--p 01400000 fe:01 1234                       /usr/local/bin/image reflector
Rss:                 900 kB
Anonymous:           900 kB
55d0c1500000-55d0c1510000 rw-p 01500000 fe:01 1234                       /usr/local/bin/image reflector
Rss:                  64 kB
Anonymous:            64 kB
7f0000000000-7f0000200000 r-xp 00000000 fe:01 99                         /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                1200 kB
Anonymous:             0 kB
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
Rss:                  40 kB
";

    #[test]
    fn the_executables_mappings_are_read_from_smaps() {
        let found = mappings_of(SMAPS, "/usr/local/bin/image reflector");
        let summary: Vec<_> = found
            .iter()
            .map(|m| (m.start, m.writable, m.rss_kib, m.anonymous_kib))
            .collect();
        assert_eq!(
            summary,
            [
                (0x55d0c0000000, false, 512, 0),
                (0x55d0c0200000, false, 10800, 0),
                (0x55d0c1400000, false, 900, 900),
                (0x55d0c1500000, true, 64, 64),
            ]
        );
        assert_eq!(found[1].end, 0x55d0c1400000);
        assert!(mappings_of(SMAPS, "/usr/local/bin/image").is_empty());
    }

    /// Unmapping a mapping with private pages would lose them: the relocated RELRO data gets
    /// reclaim only, writable mappings nothing.
    #[test]
    fn only_mappings_of_the_files_bytes_are_unmapped() {
        let found = mappings_of(SMAPS, "/usr/local/bin/image reflector");
        let advice: Vec<_> = found.iter().map(advice_for).collect();
        let unmap: &[Advice] = &[Advice::Cold, Advice::DontNeed];
        assert_eq!(advice, [unmap, unmap, &[Advice::PageOut], &[]]);
    }

    /// A read-only private mapping of a file, `pages` long, each page filled with its number.
    struct Mapped {
        _file: tempfile::NamedTempFile,
        path: String,
        at: *mut u8,
        len: usize,
    }

    impl Mapped {
        fn new(pages: usize, writable: bool) -> Mapped {
            let mut file = tempfile::NamedTempFile::new().unwrap();
            for page in 0..pages {
                file.write_all(&[page as u8; 4096]).unwrap();
            }
            file.flush().unwrap();
            let len = pages * 4096;
            let fd = std::os::fd::AsRawFd::as_raw_fd(file.as_file());
            let prot = libc::PROT_READ | if writable { libc::PROT_WRITE } else { 0 };
            // SAFETY: a new private mapping of a file this test owns, unmapped in Drop.
            let at =
                unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_PRIVATE, fd, 0) };
            assert_ne!(at, libc::MAP_FAILED);
            let path = file.path().to_string_lossy().into_owned();
            Mapped {
                _file: file,
                path,
                at: at.cast(),
                len,
            }
        }

        fn byte(&self, offset: usize) -> u8 {
            // SAFETY: offset is inside the mapping, which lives as long as self.
            unsafe { std::ptr::read_volatile(self.at.add(offset)) }
        }

        fn touch_all(&self) -> u64 {
            (0..self.len)
                .step_by(4096)
                .map(|o| u64::from(self.byte(o)))
                .sum()
        }

        fn mapping(&self) -> Mapping {
            let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
            let found = mappings_of(&smaps, &self.path);
            assert_eq!(found.len(), 1, "{found:?}");
            found[0].clone()
        }
    }

    impl Drop for Mapped {
        fn drop(&mut self) {
            // SAFETY: the mapping made in new, not used after this.
            unsafe { libc::munmap(self.at.cast(), self.len) };
        }
    }

    /// What the Pod relies on: a process that may not reclaim a file's pages (it neither owns
    /// the file nor holds CAP_FOWNER) still unmaps them, and reads the same bytes after.
    #[test]
    fn a_clean_mapping_is_unmapped_and_reads_the_same_after() {
        let mapped = Mapped::new(64, false);
        let sum = mapped.touch_all();
        let before = mapped.mapping();
        assert!(
            before.rss_kib >= 64 * 4 && before.anonymous_kib == 0,
            "{before:?}"
        );
        assert!(advise(before.start, before.end, Advice::Cold));
        assert!(advise(before.start, before.end, Advice::DontNeed));
        assert_eq!(mapped.mapping().rss_kib, 0);
        assert_eq!(mapped.touch_all(), sum);
        assert_eq!(mapped.byte(63 * 4096 + 7), 63);
    }

    /// A relocated page (written, then made read-only, as the loader does under RELRO) keeps
    /// what was written through every advice its mapping gets.
    #[test]
    fn a_mapping_with_private_pages_keeps_them() {
        let mapped = Mapped::new(4, true);
        // SAFETY: inside the mapping, which is writable until the mprotect below.
        unsafe { std::ptr::write_volatile(mapped.at.add(4096), 0xAB) };
        // SAFETY: the whole mapping made by Mapped::new.
        let done = unsafe { libc::mprotect(mapped.at.cast(), mapped.len, libc::PROT_READ) };
        assert_eq!(done, 0);
        let mapping = mapped.mapping();
        assert!(
            !mapping.writable && mapping.anonymous_kib >= 4,
            "{mapping:?}"
        );
        for advice in advice_for(&mapping) {
            advise(mapping.start, mapping.end, *advice);
        }
        assert_eq!(mapped.byte(4096), 0xAB);
        assert_eq!(mapped.byte(2 * 4096), 2);
    }

    /// The test binary's own read-only mappings are given back and it goes on running the code
    /// it gave back (this test's assertions run after). Less stays resident than was; how much
    /// less is measured on the controller (docs/benchmarks.md), not here: other tests run in
    /// this process meanwhile and map code back in.
    #[test]
    fn the_executables_clean_pages_are_given_back() {
        let given = give_back().expect("/proc/self/smaps is readable");
        assert!(
            given.before_kib > 1024 && given.after_kib < given.before_kib,
            "{given:?}"
        );
        assert!(give_back().is_some());
    }
}
