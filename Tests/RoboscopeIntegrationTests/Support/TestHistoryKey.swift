import Foundation
import RoboscopeProofs
import Synchronization

/// The history key of the servers the tests start (`--signing-key-file`): one per test
/// process, written once to a file of its own.
enum TestHistoryKey {
    static let seed: [UInt8] = HistorySigner.newSeed()
    private static let written = Mutex<String?>(nil)

    /// The deployment name of the servers of a database: the database's name.
    static func deployment(of databaseURL: String) -> String {
        URLComponents(string: databaseURL)?.path.split(separator: "/").last.map(String.init) ?? "local"
    }

    /// The key's verifier, as the servers of the database name it.
    static func verifier(_ databaseURL: String) -> NoteVerifier {
        try! HistorySigner(name: "roboscope/\(deployment(of: databaseURL))", seed: seed).verifier
    }

    static func path() throws -> String {
        try written.withLock { path in
            if let path { return path }
            let file = FileManager.default.temporaryDirectory
                .appendingPathComponent("roboscope-test-history-key-\(getpid())").path
            guard
                FileManager.default.createFile(
                    atPath: file, contents: Data((Data(seed).base64EncodedString() + "\n").utf8),
                    attributes: [.posixPermissions: 0o600])
            else { throw TestFailure("cannot write \(file)") }
            path = file
            return file
        }
    }
}
