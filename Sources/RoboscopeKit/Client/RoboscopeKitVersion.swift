import Foundation

/// The kit's version and the system it runs on, as its `User-Agent` names them.
public enum RoboscopeKitVersion {
    /// Raised with each release of the kit (docs/client-kit.md).
    public static let current = "1.6.0"

    /// `iOS`, `macOS` or `Linux`, and the system's version where it says it.
    public static var system: String {
        let version = ProcessInfo.processInfo.operatingSystemVersion
        let numbers = "\(version.majorVersion).\(version.minorVersion)"
        #if os(iOS)
        return "iOS \(numbers)"
        #elseif os(macOS)
        return "macOS \(numbers)"
        #elseif os(Linux)
        return "Linux"
        #else
        return "unknown"
        #endif
    }
}
