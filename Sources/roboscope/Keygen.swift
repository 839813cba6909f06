import ArgumentParser
import Foundation
import RoboscopeProofs

/// `roboscope keygen --out FILE`: a new history key (verifiable history), written where
/// only its owner reads it; prints the verifier key that clients pin.
struct Keygen: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make a history key (--signing-key-file) and print its verifier key.")

    @Option(help: "Where to write the key (a new file, mode 0600).") var out: String
    @Option(name: Settings.deploymentName.name, help: Settings.deploymentName.help) var deploymentNameFlag: String?

    func run() throws {
        let seed = HistorySigner.newSeed()
        let signer = try HistorySigner(
            name: HistoryKeyFile.keyName(deployment: try Settings.deploymentName.value(deploymentNameFlag)), seed: seed)
        guard
            FileManager.default.createFile(
                atPath: out, contents: Data((Data(seed).base64EncodedString() + "\n").utf8),
                attributes: [.posixPermissions: 0o600])
        else { throw ValidationError("cannot write \(out)") }
        print(signer.verifier.description)
    }
}

/// The history key's file: a 32-byte seed in base64 on one line.
enum HistoryKeyFile {
    static func keyName(deployment: String) -> String { "roboscope/\(deployment)" }

    static func signer(path: String, deployment: String) throws -> HistorySigner {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("--signing-key-file: cannot read \(path)")
        }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let seed = Data(base64Encoded: text), seed.count == 32 else {
            throw ValidationError(
                "--signing-key-file: \(path) does not hold a 32-byte seed in base64 (roboscope keygen)")
        }
        return try HistorySigner(name: keyName(deployment: deployment), seed: Array(seed))
    }
}
