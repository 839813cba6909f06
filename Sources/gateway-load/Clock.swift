#if canImport(Glibc)
import Glibc
#endif

/// Monotonic microseconds: the writer and the readers share one process, so one clock.
func nowMicros() -> Int64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Int64(time.tv_sec) * 1_000_000 + Int64(time.tv_nsec) / 1000
}

/// Resident memory of a process in KiB, from /proc.
func residentKiB(_ pid: Int32) -> Int {
    guard pid > 0, let file = fopen("/proc/\(pid)/status", "r") else { return 0 }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, 256, file) != nil {
        let text = String(cString: line)
        if text.hasPrefix("VmRSS:") {
            return Int(text.dropFirst(6).trimmingCharacters(in: " \tkB\n")) ?? 0
        }
    }
    return 0
}

extension StringProtocol {
    func trimmingCharacters(in set: String) -> String {
        var slice = Substring(self)
        while let first = slice.first, set.contains(first) { slice.removeFirst() }
        while let last = slice.last, set.contains(last) { slice.removeLast() }
        return String(slice)
    }
}

/// Raises the open-file limit to the hard limit (10,000 sockets need it).
func raiseFileLimit() {
    var limit = rlimit()
    let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    guard getrlimit(resource, &limit) == 0 else { return }
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(resource, &limit)
}
