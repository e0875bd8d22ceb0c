//! A pinned BPF map opened by path and updated from user space, through the raw bpf(2) syscall.
//!
//! Why raw syscalls: the emulator needs three commands (BPF_OBJ_GET, BPF_OBJ_GET_INFO_BY_FD,
//! BPF_MAP_UPDATE_ELEM) on a map someone else created and pinned; libbpf-rs would add a C library
//! build (libbpf, libelf, zlib) and a large crate tree for that, and the three `union bpf_attr`
//! layouts below are stable kernel ABI (include/uapi/linux/bpf.h: fields are only ever appended,
//! and the kernel accepts a shorter attr as long as it is zero-filled).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// bpf(2) commands (enum bpf_cmd).
pub(crate) mod cmd {
    pub const MAP_CREATE: libc::c_long = 0;
    #[cfg(test)]
    pub const MAP_LOOKUP_ELEM: libc::c_long = 1;
    pub const MAP_UPDATE_ELEM: libc::c_long = 2;
    pub const OBJ_GET: libc::c_long = 7;
    pub const OBJ_GET_INFO_BY_FD: libc::c_long = 15;
}

/// `BPF_MAP_TYPE_LRU_HASH` (enum bpf_map_type).
pub const MAP_TYPE_LRU_HASH: u32 = 9;
/// Update flag `BPF_ANY`: create the entry or overwrite it.
pub const BPF_ANY: u64 = 0;

/// The `BPF_OBJ_GET` member of union bpf_attr.
#[repr(C)]
#[derive(Default)]
struct ObjGetAttr {
    pathname: u64,
    bpf_fd: u32,
    file_flags: u32,
    path_fd: i32,
    _pad: u32,
}

/// The `BPF_MAP_CREATE` member of union bpf_attr (first fields).
#[repr(C)]
#[derive(Default)]
struct CreateAttr {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
}

/// The `BPF_MAP_*_ELEM` member of union bpf_attr.
#[repr(C)]
#[derive(Default)]
struct ElemAttr {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

/// The `BPF_OBJ_GET_INFO_BY_FD` member of union bpf_attr.
#[repr(C)]
#[derive(Default)]
struct InfoAttr {
    bpf_fd: u32,
    info_len: u32,
    info: u64,
}

/// The leading fields of `struct bpf_map_info` (the kernel fills what fits in `info_len`).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct MapInfo {
    pub map_type: u32,
    pub id: u32,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    pub map_flags: u32,
    pub name: [u8; 16],
}

/// bpf(2) with one attr struct.
pub(crate) fn bpf<T>(command: libc::c_long, attr: &mut T) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a live, fully initialized #[repr(C)] attr of the command's layout; its
    // size is passed, and the kernel copies in at most that many bytes.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            command,
            attr as *mut T as *mut libc::c_void,
            std::mem::size_of::<T>() as libc::c_uint,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// A BPF map this process holds a file descriptor of.
#[derive(Debug)]
pub struct BpfMap {
    fd: OwnedFd,
    info: MapInfo,
    path: PathBuf,
}

impl BpfMap {
    /// Opens the map pinned at `path` (BPF_OBJ_GET) and reads its description. Errors say what
    /// failed and where (no such pin, not a bpffs path, no permission, not a map).
    pub fn open_pinned(path: &Path) -> io::Result<BpfMap> {
        let cpath = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
        let mut attr = ObjGetAttr {
            pathname: cpath.as_ptr() as u64,
            ..Default::default()
        };
        let fd = bpf(cmd::OBJ_GET, &mut attr).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot open pinned BPF object {}: {e}", path.display()),
            )
        })?;
        // SAFETY: a successful BPF_OBJ_GET returns a new file descriptor that we now own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
        let info = map_info(&fd).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("{} is not a BPF map: {e}", path.display()),
            )
        })?;
        Ok(BpfMap {
            fd,
            info,
            path: path.to_path_buf(),
        })
    }

    /// Type, sizes and name of the map.
    pub fn info(&self) -> &MapInfo {
        &self.info
    }

    /// Checks that the map has this type and these key and value sizes; the error names the
    /// path, what was expected and what the map has.
    pub fn expect_layout(&self, map_type: u32, key_size: u32, value_size: u32) -> io::Result<()> {
        let i = &self.info;
        if (i.map_type, i.key_size, i.value_size) == (map_type, key_size, value_size) {
            return Ok(());
        }
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "BPF map {}: expected type {map_type}, key {key_size} bytes, value {value_size} bytes; \
                 it has type {}, key {} bytes, value {} bytes",
                self.path.display(),
                i.map_type,
                i.key_size,
                i.value_size
            ),
        ))
    }

    /// BPF_MAP_UPDATE_ELEM with `flags` (e.g. [`BPF_ANY`]). Key and value must have the map's
    /// sizes (checked: the kernel would read past a shorter buffer).
    pub fn update(&self, key: &[u8], value: &[u8], flags: u64) -> io::Result<()> {
        if key.len() != self.info.key_size as usize || value.len() != self.info.value_size as usize
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "key or value size differs from the map's",
            ));
        }
        update_elem(&self.fd, key.as_ptr(), value.as_ptr(), flags)
    }
}

/// BPF_MAP_CREATE of an unnamed map without flags.
pub(crate) fn create_map(
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
) -> io::Result<OwnedFd> {
    let mut attr = CreateAttr {
        map_type,
        key_size,
        value_size,
        max_entries,
        ..Default::default()
    };
    let fd = bpf(cmd::MAP_CREATE, &mut attr)?;
    // SAFETY: a successful BPF_MAP_CREATE returns a new file descriptor that we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// BPF_MAP_UPDATE_ELEM. The caller guarantees that `key` and `value` point at the map's key and
/// value sizes of readable memory.
pub(crate) fn update_elem(
    map: &OwnedFd,
    key: *const u8,
    value: *const u8,
    flags: u64,
) -> io::Result<()> {
    let mut attr = ElemAttr {
        map_fd: map.as_raw_fd() as u32,
        key: key as u64,
        value: value as u64,
        flags,
        ..Default::default()
    };
    bpf(cmd::MAP_UPDATE_ELEM, &mut attr).map(|_| ())
}

fn map_info(fd: &OwnedFd) -> io::Result<MapInfo> {
    let mut info = MapInfo::default();
    let mut attr = InfoAttr {
        bpf_fd: fd.as_raw_fd() as u32,
        info_len: std::mem::size_of::<MapInfo>() as u32,
        info: &mut info as *mut MapInfo as u64,
    };
    bpf(cmd::OBJ_GET_INFO_BY_FD, &mut attr)?;
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh unpinned map (closed, hence freed, when the test ends).
    fn create(map_type: u32, key_size: u32, value_size: u32) -> BpfMap {
        let fd =
            create_map(map_type, key_size, value_size, 64).expect("BPF_MAP_CREATE (needs root)");
        let info = map_info(&fd).unwrap();
        BpfMap {
            fd,
            info,
            path: PathBuf::from("(unpinned)"),
        }
    }

    fn lookup(m: &BpfMap, key: &[u8]) -> Option<Vec<u8>> {
        let mut v = vec![0u8; m.info.value_size as usize];
        let mut attr = ElemAttr {
            map_fd: m.fd.as_raw_fd() as u32,
            key: key.as_ptr() as u64,
            value: v.as_mut_ptr() as u64,
            ..Default::default()
        };
        bpf(cmd::MAP_LOOKUP_ELEM, &mut attr).ok().map(|_| v)
    }

    fn is_root() -> bool {
        // SAFETY: no arguments, no side effects.
        unsafe { libc::geteuid() == 0 }
    }

    #[test]
    fn layouts_match_the_kernel_uapi() {
        assert_eq!(std::mem::size_of::<ObjGetAttr>(), 24);
        assert_eq!(std::mem::size_of::<ElemAttr>(), 32);
        assert_eq!(std::mem::size_of::<InfoAttr>(), 16);
        assert_eq!(std::mem::size_of::<MapInfo>(), 40);
    }

    #[test]
    fn update_writes_what_lookup_reads_and_layout_is_checked() {
        if !is_root() {
            eprintln!("skipped: BPF maps need root");
            return;
        }
        let m = create(MAP_TYPE_LRU_HASH, 16, 16);
        assert_eq!(
            (m.info().map_type, m.info().key_size, m.info().value_size),
            (9, 16, 16)
        );
        m.expect_layout(MAP_TYPE_LRU_HASH, 16, 16).unwrap();
        let e = m.expect_layout(MAP_TYPE_LRU_HASH, 16, 8).unwrap_err();
        assert!(
            e.to_string()
                .contains("value 8 bytes; it has type 9, key 16 bytes, value 16 bytes"),
            "{e}"
        );
        let key: Vec<u8> = (0..16).collect();
        m.update(&key, &[7u8; 16], BPF_ANY).unwrap();
        m.update(&key, &[9u8; 16], BPF_ANY).unwrap();
        assert_eq!(lookup(&m, &key), Some(vec![9u8; 16]));
        assert_eq!(lookup(&m, &[1u8; 16]), None);
        assert!(m.update(&key, &[0u8; 8], BPF_ANY).is_err());
    }

    #[test]
    fn a_missing_pin_is_a_clear_error() {
        let e = BpfMap::open_pinned(Path::new("/sys/fs/bpf/satlab-no-such-map")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot open pinned BPF object /sys/fs/bpf/satlab-no-such-map: "),
            "{e}"
        );
    }
}
