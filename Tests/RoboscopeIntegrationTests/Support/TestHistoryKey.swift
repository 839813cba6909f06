import Foundation
import RoboscopeProofs
import Synchronization

/// The history key of the servers the tests start (`--signing-key-file`): one per test
/// process, written once to a file of its own.
enum TestHistoryKey {
    static let seed: [UInt8] = HistorySigner.newSeed()
    private static let written = Mutex<String?>(nil)

    /// The key's verifier, as the servers name it (`--deployment-name` `local`).
    static var verifier: NoteVerifier { try! HistorySigner(name: "roboscope/local", seed: seed).verifier }

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
