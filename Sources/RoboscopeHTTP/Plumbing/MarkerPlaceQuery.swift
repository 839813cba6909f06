import RoboscopeDomain
import RoboscopePostgres

/// `near=<x>,<z>&range=<metres>` or `bbox=<min_x>,<min_z>,<max_x>,<max_z>` on the marker
/// list: the floor-plan coordinates of the marker's centre (x = cross, z = long).
enum MarkerPlaceQuery {
    static func place(_ input: RequestInput) throws -> MarkerFilter.Place? {
        let near = input.query("near")
        let range = input.query("range")
        let bbox = input.query("bbox")
        if near != nil, bbox != nil {
            throw DomainError(.malformedRequest, "query bbox: give near or bbox, not both", field: "bbox")
        }
        if let near {
            let point = try numbers(near, count: 2, name: "near", shape: "<x>,<z>")
            guard let range else {
                throw DomainError(.malformedRequest, "query range: required with near (metres)", field: "range")
            }
            guard let metres = Double(range), metres.isFinite, metres >= 0 else {
                throw DomainError(
                    .malformedRequest, "query range: expected a distance in metres, 0 or more", field: "range")
            }
            return .near(x: point[0], z: point[1], range: metres)
        }
        if range != nil {
            throw DomainError(.malformedRequest, "query range: only with near=<x>,<z>", field: "range")
        }
        if let bbox {
            let box = try numbers(bbox, count: 4, name: "bbox", shape: "<min_x>,<min_z>,<max_x>,<max_z>")
            guard box[0] <= box[2], box[1] <= box[3] else {
                throw DomainError(
                    .malformedRequest, "query bbox: min_x must not exceed max_x, nor min_z max_z", field: "bbox")
            }
            return .box(minX: box[0], minZ: box[1], maxX: box[2], maxZ: box[3])
        }
        return nil
    }

    static func numbers(_ text: String, count: Int, name: String, shape: String) throws -> [Double] {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map {
            Double($0.trimmingCharacters(in: .whitespaces))
        }
        guard parts.count == count, parts.allSatisfy({ $0?.isFinite == true }) else {
            throw DomainError(.malformedRequest, "query \(name): expected \(count) numbers \(shape)", field: name)
        }
        return parts.map { $0! }
    }
}
