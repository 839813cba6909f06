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

/// CPU time a process has used (user + system), in seconds, from /proc; 0 when unknown.
func cpuSeconds(_ pid: Int32) -> Double {
    guard pid > 0, let file = fopen("/proc/\(pid)/stat", "r") else { return 0 }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 1024)
    guard fgets(&line, 1024, file) != nil else { return 0 }
    // After the command's name (in parentheses, which may hold spaces): utime and stime are
    // the 12th and 13th fields, in clock ticks.
    let text = String(cString: line)
    guard let close = text.lastIndex(of: ")") else { return 0 }
    let fields = text[text.index(after: close)...].split(separator: " ")
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
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
