import RoboscopeDomain

/// The joins and leaves of one session within one turn of the presence loop, netted:
/// a user who joins and leaves again (or leaves and comes back) between two messages
/// changed nothing. Fed the payloads PresenceStore publishes
/// (`{"event": "join" | "leave", "user_id": …}`).
struct PresenceDelta: Equatable {
    private(set) var joined: [String] = []
    private(set) var left: [String] = []

    var isEmpty: Bool { joined.isEmpty && left.isEmpty }

    mutating func apply(_ payload: String) {
        guard case .object(let event)? = try? JSONParser.parse(Array(payload.utf8)),
            case .string(let kind)? = event["event"], case .string(let user)? = event["user_id"]
        else { return }
        switch kind {
        case "join": join(user)
        case "leave": leave(user)
        default: break
        }
    }

    mutating func join(_ user: String) {
        if let index = left.firstIndex(of: user) {
            left.remove(at: index)
        } else if !joined.contains(user) {
            joined.append(user)
        }
    }

    mutating func leave(_ user: String) {
        if let index = joined.firstIndex(of: user) {
            joined.remove(at: index)
        } else if !left.contains(user) {
            left.append(user)
        }
    }
}
