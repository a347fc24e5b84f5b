/// Which of a store's environments a purchase was made in (DESIGN.md, "Environments"). Apple's
/// Sandbox (TestFlight, review, sandbox testers) and Google Play's test purchases (license
/// testers) are both `sandbox`: real purchases of a test environment, tracked like any other.
public enum PurchaseEnvironment: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    case production
    case sandbox

    public var description: String { rawValue }
}

/// The store's own id of an app: an App Store bundle id or a Google Play package name. Every
/// purchase records the app it belongs to, and every store call made for it uses that app.
public struct AppID: StringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
}

/// One app in one store: a bundle id and a package name may be spelled alike, so an app is only
/// named with its store.
public struct StoreApp: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    public var store: Store
    public var id: AppID

    public init(_ store: Store, _ id: AppID) {
        self.store = store
        self.id = id
    }

    public var description: String { "\(store.rawValue):\(id)" }
    public static func < (lhs: Self, rhs: Self) -> Bool { (lhs.store.rawValue, lhs.id) < (rhs.store.rawValue, rhs.id) }
}

/// Which purchases may grant access in this deployment: production purchases always; sandbox
/// purchases only in a sandbox deployment, or for the apps whose configuration lets them
/// (off by default; TestFlight and review builds need it).
public struct EnvironmentAccess: Sendable, Hashable {
    /// The environment this deployment serves.
    public var deployment: PurchaseEnvironment
    /// Apps whose sandbox purchases grant access in a production deployment.
    public var sandboxGrantingApps: Set<StoreApp>

    public init(deployment: PurchaseEnvironment = .production, sandboxGrantingApps: Set<StoreApp> = []) {
        self.deployment = deployment
        self.sandboxGrantingApps = sandboxGrantingApps
    }

    /// Everything grants: a sandbox deployment (tests, the demo).
    public static let sandbox = EnvironmentAccess(deployment: .sandbox)

    /// Whether a purchase of `environment` in `app` may grant access here. A purchase whose app
    /// is not recorded (a row from before apps were recorded) is judged by its environment alone.
    public func admits(_ environment: PurchaseEnvironment, of app: StoreApp?) -> Bool {
        switch environment {
        case .production: return true
        case .sandbox: return deployment == .sandbox || app.map(sandboxGrantingApps.contains) ?? false
        }
    }

    public func admits(_ purchase: Purchase) -> Bool {
        admits(purchase.environment, of: purchase.app.map { StoreApp(purchase.key.store, $0) })
    }
}
