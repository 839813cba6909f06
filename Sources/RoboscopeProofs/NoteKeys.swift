import Crypto
import Foundation
import RoboscopeWire

/// The service's history key (Ed25519): it signs every append and every checkpoint. Made
/// from a 32-byte seed (`roboscope keygen`), which is read from a file and never stored
/// in the database.
public struct HistorySigner: Sendable {
    public let name: String
    let key: Curve25519.Signing.PrivateKey
    public let verifier: NoteVerifier

    public init(name: String, seed: [UInt8]) throws {
        guard seed.count == 32 else {
            throw NoteVerifier.Malformed("a history key's seed is 32 bytes, not \(seed.count)")
        }
        try NoteVerifier.checkName(name)
        self.name = name
        key = try Curve25519.Signing.PrivateKey(rawRepresentation: seed)
        verifier = try NoteVerifier(name: name, publicKey: Array(key.publicKey.rawRepresentation))
    }

    /// A new random seed, for `roboscope keygen`.
    public static func newSeed() -> [UInt8] {
        Array(Curve25519.Signing.PrivateKey().rawRepresentation)
    }

    public func signature(of text: String) throws -> [UInt8] {
        Array(try key.signature(for: Array(text.utf8)))
    }

    /// `text` as a signed note (c2sp.org/signed-note) with this key's one signature.
    public func signedNote(_ text: String) throws -> String {
        let signature = verifier.keyID + (try self.signature(of: text))
        return "\(text)\n\u{2014} \(name) \(Data(signature).base64EncodedString())\n"
    }
}

/// A history key's public half, as a signed note's verifier names it:
/// `<name>+<key ID, 8 hex digits>+<base64 of 0x01 and the 32-byte key>`.
public struct NoteVerifier: Sendable, Hashable, CustomStringConvertible {
    public let name: String
    public let publicKey: [UInt8]
    /// The first four bytes of SHA-256(name, newline, 0x01, key): c2sp.org/signed-note's key ID.
    public let keyID: [UInt8]

    public struct Malformed: Error, CustomStringConvertible, Equatable {
        public let description: String

        public init(_ description: String) {
            self.description = description
        }
    }

    static let ed25519: UInt8 = 0x01

    public init(name: String, publicKey: [UInt8]) throws {
        try Self.checkName(name)
        guard publicKey.count == 32 else { throw Malformed("an Ed25519 key is 32 bytes, not \(publicKey.count)") }
        self.name = name
        self.publicKey = publicKey
        keyID = Array(SHA256.hash(data: Array(name.utf8) + [0x0A, Self.ed25519] + publicKey).prefix(4))
    }

    /// Reads `<name>+<key ID>+<base64 key>`.
    public init(_ text: String) throws {
        let parts = text.trimmingCharacters(in: .whitespacesAndNewlines).split(
            separator: "+", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw Malformed("a verifier key is <name>+<key ID>+<base64 key>") }
        guard let encoded = Data(base64Encoded: String(parts[2])), encoded.count == 33,
            encoded.first == Self.ed25519
        else { throw Malformed("the verifier key's last part is not base64 of an Ed25519 key") }
        try self.init(name: String(parts[0]), publicKey: Array(encoded.dropFirst()))
        guard Hex.encode(keyID) == parts[1].lowercased() else {
            throw Malformed("the verifier key's ID \(parts[1]) is not its key's (\(Hex.encode(keyID)))")
        }
    }

    public var description: String {
        "\(name)+\(Hex.encode(keyID))+\(Data([Self.ed25519] + publicKey).base64EncodedString())"
    }

    public func isValid(signature: [UInt8], of text: String) -> Bool {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: publicKey) else { return false }
        return key.isValidSignature(signature, for: Array(text.utf8))
    }

    /// The text of `note` when this key signed it; throws otherwise.
    public func open(_ note: String) throws -> String {
        guard let split = note.range(of: "\n\n", options: .backwards) else {
            throw Malformed("a signed note is its text, a blank line and its signatures")
        }
        let text = String(note[..<split.lowerBound]) + "\n"
        var verified = false
        for line in note[split.upperBound...].split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 3, fields[0] == "\u{2014}" else {
                throw Malformed("a signature line is an em dash, the key's name and its signature")
            }
            guard let signature = Data(base64Encoded: String(fields[2])), signature.count > 4 else {
                throw Malformed("a note's signature is not base64")
            }
            // Signatures of other keys are passed over, as the format asks.
            guard fields[1] == name, Array(signature.prefix(4)) == keyID else { continue }
            guard isValid(signature: Array(signature.dropFirst(4)), of: text) else {
                throw Malformed("the note's signature by \(name) does not verify")
            }
            verified = true
        }
        guard verified else { throw Malformed("the note is not signed by \(name)") }
        return text
    }

    static func checkName(_ name: String) throws {
        guard !name.isEmpty, !name.contains("+"), !name.unicodeScalars.contains(where: { $0.value <= 0x20 }) else {
            throw Malformed("a key name is not empty and holds no space, no control character and no +")
        }
    }
}
