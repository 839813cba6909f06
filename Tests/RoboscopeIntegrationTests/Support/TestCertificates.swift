import Foundation

/// A certificate authority of the test's own and server certificates it signed, made
/// with the `openssl` command in a folder of their own: what a TLS test trusts and
/// what its terminator presents.
struct TestCertificates {
    /// A server's certificate chain and key, as PEM files.
    struct Server {
        let certificate: String
        let key: String
    }

    let folder: URL
    /// The authority, as a PEM file: what a client told to trust it passes.
    let authority: String

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("roboscope-tls-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        authority = folder.appendingPathComponent("ca.pem").path
        try Self.openssl(
            in: folder,
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Roboscope test authority",
            ])
    }

    /// A certificate for `names` (`DNS:localhost`, `IP:127.0.0.1`), signed by the authority.
    func server(_ name: String, names: [String]) throws -> Server {
        let extensions = folder.appendingPathComponent("\(name).ext")
        try """
        subjectAltName=\(names.joined(separator: ","))
        basicConstraints=CA:FALSE
        keyUsage=digitalSignature
        extendedKeyUsage=serverAuth

        """.write(to: extensions, atomically: true, encoding: .utf8)
        try Self.openssl(
            in: folder,
            [
                "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", "\(name).key", "-out", "\(name).csr", "-subj", "/CN=\(name)",
            ])
        try Self.openssl(
            in: folder,
            [
                "x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "2", "-extfile", extensions.path, "-out", "\(name).pem",
            ])
        return Server(
            certificate: folder.appendingPathComponent("\(name).pem").path,
            key: folder.appendingPathComponent("\(name).key").path)
    }

    func remove() {
        try? FileManager.default.removeItem(at: folder)
    }

    private static func openssl(in folder: URL, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = folder
        let errors = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        let said = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestFailure("openssl \(arguments.first ?? "") failed: \(String(decoding: said, as: UTF8.self))")
        }
    }
}
