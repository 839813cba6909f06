import Foundation

/// A file an operator names in a setting (a tokens file, an issuers file, a plans file):
/// its bytes, or a refusal that names the file and why it cannot be read.
public enum SettingsFile {
    public static func read(_ path: String) throws -> Data {
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw AuthenticationFailure("\(path): cannot be read (\(error.localizedDescription))")
        }
    }
}
