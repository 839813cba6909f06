import CLinuxSystem
#if canImport(Glibc)
import Glibc
#endif

/// The gateway holds one descriptor per connection: the default soft limit (often
/// 1024) would cap it long before memory does.
public enum FileLimit {
    /// Raises the soft limit on open files to the hard limit; returns the new soft limit.
    @discardableResult
    public static func raiseToHardLimit() -> Int {
        var limit = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        guard getrlimit(resource, &limit) == 0 else { return -1 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(resource, &raised) == 0 { return Int(raised.rlim_cur) }
        }
        return Int(limit.rlim_cur)
    }
}
