import RoboscopeDomain

/// What `roboscope replay` prints: spaces with their sessions and markers, or one
/// session with its markers, as they were at `asOf`.
struct ReplayedState: JSONWritable {
    let asOf: AsOf
    var spaces: [(Space, [(WorkSession, [MarkerWithDetails])])] = []
    /// Set when one work session was asked for.
    var sessions: [(WorkSession, [MarkerWithDetails])] = []

    func writeJSON(to writer: inout JSONWriter) {
        writer.object { writer in
            writer.key("as_of"); writer.value(asOf.description)
            if sessions.isEmpty {
                writer.key("spaces")
                writer.array(spaces) { writer, entry in
                    writer.object { writer in
                        writer.key("space"); writer.value(entry.0)
                        writer.key("work_sessions"); writer.array(entry.1) { Self.write(session: $1, to: &$0) }
                    }
                }
            } else {
                writer.key("work_sessions"); writer.array(sessions) { Self.write(session: $1, to: &$0) }
            }
        }
    }

    static func write(session entry: (WorkSession, [MarkerWithDetails]), to writer: inout JSONWriter) {
        writer.object { writer in
            writer.key("work_session"); writer.value(entry.0)
            writer.key("markers"); writer.array(entry.1) { $0.value($1) }
        }
    }

    /// One line per entity, indented by level.
    func table() -> String {
        var lines = ["state as of \(asOf)"]
        func add(_ sessions: [(WorkSession, [MarkerWithDetails])], indent: String) {
            for (session, markers) in sessions {
                lines.append(
                    """
                    \(indent)work_session \(session.id)  \(session.sessionType.rawValue)  \
                    \(session.status.rawValue)  v\(session.version)  \(markers.count) markers
                    """
                )
                for item in markers {
                    let marker = item.marker
                    let center =
                        item.details.map {
                            "center (\($0.measurements.centerLocationCross), \($0.measurements.centerLocationLong))"
                        } ?? "no details"
                    let (label, updated) = (marker.label ?? "-", marker.updatedAt.formatted(.wire))
                    lines.append(
                        "\(indent)  marker \(marker.id)  \(label)  v\(marker.version)  \(center)  updated \(updated)")
                }
            }
        }
        for (space, sessions) in spaces {
            lines.append(
                "space \(space.id)  \(space.key)  \(space.name)  tenant \(space.tenant ?? "-")  v\(space.version)")
            add(sessions, indent: "  ")
        }
        add(self.sessions, indent: "")
        return lines.joined(separator: "\n")
    }
}
