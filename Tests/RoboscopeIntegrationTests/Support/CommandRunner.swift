import Foundation

/// Runs the real `roboscope` binary with arguments and captures its output.
enum CommandRunner {
    struct Outcome {
        let status: Int32
        let output: String
    }

    static func roboscope(_ arguments: [String]) throws -> Outcome {
        let process = Process()
        process.executableURL = ServerProcess.binary
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self))
    }
}
