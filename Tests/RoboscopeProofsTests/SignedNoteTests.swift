import Foundation
import RoboscopeProofs
import Testing

struct SignedNoteTests {
    /// golang.org/x/mod's sumdb/note example, signed by the Go implementation.
    static let goVerifierKey = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
    static let goText =
        "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
    static let goNote =
        goText
        + "\n\u{2014} PeterNeumann "
        + "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"

    @Test func aNoteSignedByTheGoImplementationOpens() throws {
        let verifier = try NoteVerifier(Self.goVerifierKey)
        #expect(verifier.description == Self.goVerifierKey)
        #expect(try verifier.open(Self.goNote) == Self.goText)
    }

    @Test func anEditedNoteOrAnotherKeyIsRefused() throws {
        let verifier = try NoteVerifier(Self.goVerifierKey)
        #expect(throws: NoteVerifier.Malformed.self) {
            try verifier.open(Self.goNote.replacingOccurrences(of: "answer", with: "ANSWER"))
        }
        let other = try HistorySigner(name: "PeterNeumann", seed: HistorySigner.newSeed())
        #expect(throws: NoteVerifier.Malformed.self) { try verifier.open(try other.signedNote(Self.goText)) }
    }

    @Test func aKeyWhoseBase64HoldsAPlusIsRead() throws {
        let key = "TEST+7997405c+AQcC+FTVKf0jlTdHDY3rbevmnKxxPjigCXlVtGe6RIr6"
        #expect(try NoteVerifier(key).name == "TEST")
    }

    @Test func theServicesCheckpointsOpenWithItsVerifierKey() throws {
        let signer = try HistorySigner(name: "roboscope/test", seed: Array(repeating: 7, count: 32))
        let checkpoint = Checkpoint(
            origin: Checkpoint.origin(deployment: "test", tenant: "acme"), size: 42, root: MerkleHash.empty)
        let note = try signer.signedNote(checkpoint.text)
        let verifier = try NoteVerifier(signer.verifier.description)
        #expect(try Checkpoint(note: note, verifier: verifier) == checkpoint)
        #expect(
            note.hasPrefix(
                "roboscope/test/acme\n42\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n\n\u{2014} roboscope/test "))
        #expect(throws: NoteVerifier.Malformed.self) {
            try Checkpoint(note: note.replacingOccurrences(of: "\n42\n", with: "\n41\n"), verifier: verifier)
        }
    }

    @Test func anAppendStatementListsItsEventsInOrder() {
        let statement = AppendStatement(
            tenant: "acme",
            entries: [.init(tenantSeq: 8, digest: [0xAB, 0x01]), .init(tenantSeq: 7, digest: [0x00, 0xFF])])
        #expect(statement.text == "roboscope-append\nacme\n7 00ff\n8 ab01\n")
    }
}
