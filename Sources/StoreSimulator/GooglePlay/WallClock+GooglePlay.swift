public import GooglePlay

// The simulator's clocks drive the Google Play module too (it declares its own clock protocol, as
// the store modules do not depend on each other).

extension SimulatorClock: GooglePlay.WallClock {}

extension ManualClock: GooglePlay.WallClock {}
