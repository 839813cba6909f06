// The marker geometry is its own pure module, shared with the client kit
// (RoboscopeKit): one implementation for the server and the devices.
@_exported import RoboscopeGeometry
// So is the wire vocabulary (`JSONValue`): one type for both sides.
@_exported import RoboscopeWire
