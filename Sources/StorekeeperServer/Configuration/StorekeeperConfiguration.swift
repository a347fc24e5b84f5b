public import Foundation
public import GooglePlay
import NIOCore
public import StoreCore
public import Storekeeper

/// Everything a Storekeeper server is configured with: read from a JSON file, with any value
/// overridable by an environment variable (see docs/configuration.md), and checked as a whole by
/// ``ConfigurationLoader`` before anything starts.
public struct StorekeeperConfiguration: Sendable {
    public var server: HTTPSettings
    /// The environment this deployment serves: in `production` (the default), sandbox and Google
    /// test purchases are tracked but grant access only for apps that say so
    /// (`sandboxGrantsAccess`, `testPurchasesGrantAccess`); in `sandbox` every purchase does.
    public var environment: PurchaseEnvironment
    /// A SQLite path (`sqlite://path` or a plain path) or a PostgreSQL URL.
    public var storageURL: String
    public var policies: Policies
    /// API keys accepted on /v1/customers. Secrets: never logged, stored only as hashes.
    public var apiKeys: [ConfiguredAPIKey]
    public var apps: [AppConfiguration]
    public var catalog: Catalog
    public var processing: ProcessingSettings
    /// The stores' API quotas this deployment keeps within (all instances together).
    public var quotas: QuotaSettings
    /// The operators' console at `/console` (off while no operator is configured).
    public var console: ConsoleSettings
    /// Where events are delivered (none by default: the feed alone).
    public var webhooks = WebhookSettings()
    /// How long events and delivery attempts are kept.
    public var retention = RetentionSettings()

    public init(
        server: HTTPSettings = HTTPSettings(), environment: PurchaseEnvironment = .production, storageURL: String,
        policies: Policies = Policies(),
        apiKeys: [ConfiguredAPIKey], apps: [AppConfiguration], catalog: Catalog,
        processing: ProcessingSettings = ProcessingSettings(), quotas: QuotaSettings = QuotaSettings(),
        console: ConsoleSettings = ConsoleSettings()
    ) {
        self.console = console
        self.quotas = quotas
        self.server = server
        self.environment = environment
        self.storageURL = storageURL
        self.policies = policies
        self.apiKeys = apiKeys
        self.apps = apps
        self.catalog = catalog
        self.processing = processing
    }

    /// Which purchases grant access here, from the deployment's environment and each app's switch.
    public var access: EnvironmentAccess {
        var apps: Set<StoreApp> = []
        for app in self.apps {
            if let appStore = app.appStore, appStore.sandboxGrantsAccess {
                apps.insert(StoreApp(.appStore, AppID(appStore.bundleID)))
            }
            if let googlePlay = app.googlePlay, googlePlay.testPurchasesGrantAccess {
                apps.insert(StoreApp(.googlePlay, AppID(googlePlay.packageName)))
            }
        }
        return EnvironmentAccess(deployment: environment, sandboxGrantingApps: apps)
    }
}

/// Where the HTTP API listens.
public struct HTTPSettings: Sendable, Hashable {
    public var host: String
    public var port: Int
    /// This instance's name among those sharing the database: it holds job leases under this name
    /// and sends it in store calls' `User-Agent`. Nil: a new random one at every start.
    public var instance: String?

    public init(host: String = "127.0.0.1", port: Int = 8080, instance: String? = nil) {
        self.host = host
        self.port = port
        self.instance = instance
    }
}

/// Decisions the operator makes once for all customers.
public struct Policies: Sendable, Hashable {
    /// What happens when a second customer presents a purchase someone else owns.
    public var ownershipConflict: OwnershipPolicy
    /// Whether a purchase made outside the app (no appAccountToken) gets the presenting customer's
    /// token set with the App Store's Set App Account Token.
    public var setAppAccountToken: Bool
    /// Who may have a promotional offer signed.
    public var promotionalOffers: OfferEligibility.PromotionalRule = .subscribersOfGroup
    /// Whether a subscription to a group on one store uses up the introductory offer of the group of
    /// the same name on the other.
    public var introductoryOffersAcrossStores = false

    public init(ownershipConflict: OwnershipPolicy = .keep, setAppAccountToken: Bool = true) {
        self.ownershipConflict = ownershipConflict
        self.setAppAccountToken = setAppAccountToken
    }
}

/// An API key as configured: its secret comes from the file, an environment variable, or a file.
public struct ConfiguredAPIKey: Sendable, Hashable, CustomStringConvertible {
    public var name: String
    public var scope: APIKeyRecord.Scope
    public var secret: String

    public init(name: String, scope: APIKeyRecord.Scope, secret: String) {
        self.name = name
        self.scope = scope
        self.secret = secret
    }

    /// Never shows the secret.
    public var description: String { "API key \(name) (\(scope.rawValue))" }
}

/// One app: its App Store part, its Google Play part, or both.
public struct AppConfiguration: Sendable, Hashable {
    /// The configuration's own name for the app (a key in `apps`).
    public var name: String
    public var appStore: AppStoreAppConfiguration?
    public var googlePlay: GooglePlayAppConfiguration?

    public init(name: String, appStore: AppStoreAppConfiguration? = nil, googlePlay: GooglePlayAppConfiguration? = nil)
    {
        self.name = name
        self.appStore = appStore
        self.googlePlay = googlePlay
    }
}

/// An app's App Store side.
public struct AppStoreAppConfiguration: Sendable, Hashable {
    public var bundleID: String
    /// Required to accept Production payloads (Apple's libraries require it too).
    public var appAppleID: Int64?
    /// Environments whose notifications and transactions are accepted (verified); each has its
    /// own verifier and API host.
    public var environments: [PurchaseEnvironment]
    /// Whether this app's Sandbox purchases grant access in a production deployment (off by
    /// default; TestFlight and App Review builds need it on).
    public var sandboxGrantsAccess: Bool
    /// App Store Connect API key: key id, issuer id and the .p8 file. Without them the server
    /// verifies signed data locally but can't call the App Store Server API.
    public var keyID: String?
    public var issuerID: String?
    public var privateKeyPath: String?
    /// Apple root certificates (DER or PEM); Apple Root CA - G3 is pinned by fingerprint.
    public var appleRootFiles: [String]
    /// Other roots to trust (the simulator's, in tests and the demo); refused unless named here.
    public var allowedRootFiles: [String]
    /// Overrides of Apple's base URLs (the simulator's, in tests and the demo).
    public var apiBaseURL: String?
    public var sandboxAPIBaseURL: String?
    /// How refund consumption requests for this app are answered (products may override it).
    public var refundPolicy = RefundPolicy()

    public init(
        bundleID: String, appAppleID: Int64? = nil, environments: [PurchaseEnvironment] = [.production, .sandbox],
        sandboxGrantsAccess: Bool = false,
        keyID: String? = nil, issuerID: String? = nil, privateKeyPath: String? = nil, appleRootFiles: [String] = [],
        allowedRootFiles: [String] = [], apiBaseURL: String? = nil, sandboxAPIBaseURL: String? = nil
    ) {
        self.bundleID = bundleID
        self.appAppleID = appAppleID
        self.environments = environments
        self.sandboxGrantsAccess = sandboxGrantsAccess
        self.keyID = keyID
        self.issuerID = issuerID
        self.privateKeyPath = privateKeyPath
        self.appleRootFiles = appleRootFiles
        self.allowedRootFiles = allowedRootFiles
        self.apiBaseURL = apiBaseURL
        self.sandboxAPIBaseURL = sandboxAPIBaseURL
    }

    /// Whether the server can call the App Store Server API for this app.
    public var canCallAPI: Bool { keyID != nil && issuerID != nil && privateKeyPath != nil }
}

/// An app's Google Play side.
public struct GooglePlayAppConfiguration: Sendable, Hashable {
    public var packageName: String
    /// The service account's JSON key file.
    public var serviceAccountKeyPath: String?
    /// The audience configured on the Pub/Sub push subscription.
    public var pushAudience: String?
    /// The service account the push subscription authenticates as.
    public var pushServiceAccount: String?
    /// Overrides of Google's endpoints (the simulator's, in tests and the demo).
    public var apiBaseURL: String?
    public var jwksURL: String?
    /// Whether license testers' test purchases grant access in a production deployment (off by
    /// default; internal testing tracks need it on).
    public var testPurchasesGrantAccess: Bool

    public init(
        packageName: String, serviceAccountKeyPath: String? = nil, pushAudience: String? = nil,
        pushServiceAccount: String? = nil, apiBaseURL: String? = nil, jwksURL: String? = nil,
        testPurchasesGrantAccess: Bool = false
    ) {
        self.packageName = packageName
        self.testPurchasesGrantAccess = testPurchasesGrantAccess
        self.serviceAccountKeyPath = serviceAccountKeyPath
        self.pushAudience = pushAudience
        self.pushServiceAccount = pushServiceAccount
        self.apiBaseURL = apiBaseURL
        self.jwksURL = jwksURL
    }
}

/// How stored notifications are processed and retried.
public struct ProcessingSettings: Sendable, Hashable {
    /// First retry delay of a failed notification; doubles per attempt up to `maxRetryDelay`.
    public var initialRetryDelay: TimeInterval
    public var maxRetryDelay: TimeInterval
    /// How often the worker looks for due notifications when it was not woken.
    public var pollInterval: TimeInterval
    /// How long a claimed notification is reserved for the worker that claimed it.
    public var lease: TimeInterval
    /// How often unacknowledged Google purchases are retried (well before Google's 3 days).
    public var acknowledgementSweepInterval: TimeInterval
    /// Catching up on notifications the stores failed to deliver.
    public var catchUp: CatchUpSettings
    /// The most stored notifications the worker claims at once; App Store ones among them are
    /// applied in one transaction. 200: with one customer's balance serializing the batches, 50 left
    /// PostgreSQL's processing behind the webhooks (Benchmarks/README.md, tenth).
    public var batchSize: Int
    /// How many batches are processed at once (``defaultWorkers`` unless configured).
    public var workers: Int
    /// How long a background job's lease lasts without renewal: how soon another instance takes
    /// the job over from one that died. Nil: twice the job's interval plus a minute.
    public var jobLease: TimeInterval?
    /// Answering refund consumption requests.
    public var refundAnswers = RefundAnswerSettings()

    /// Half the cores this process may use (`System.coreCount` counts a container's CPU limit), at
    /// least 1 and at most 4. A batch's work competes for the cores with the webhooks' signature
    /// checks and, with the database on the same host, with the database: on 2 cores, 4 workers
    /// held more claimed batches waiting on each other's locks and ran smaller batches, and one
    /// processed about a tenth more (PostgreSQL, two instances; Benchmarks/README.md, ninth). More
    /// cores get more workers, to overlap batches' round trips to a remote database.
    public static var defaultWorkers: Int { min(4, max(1, System.coreCount / 2)) }

    public init(
        initialRetryDelay: TimeInterval = 5, maxRetryDelay: TimeInterval = 3600, pollInterval: TimeInterval = 1,
        lease: TimeInterval = 60, acknowledgementSweepInterval: TimeInterval = 600,
        catchUp: CatchUpSettings = CatchUpSettings(), batchSize: Int = 200,
        workers: Int = ProcessingSettings.defaultWorkers
    ) {
        self.workers = workers
        self.catchUp = catchUp
        self.batchSize = batchSize
        self.initialRetryDelay = initialRetryDelay
        self.maxRetryDelay = maxRetryDelay
        self.pollInterval = pollInterval
        self.lease = lease
        self.acknowledgementSweepInterval = acknowledgementSweepInterval
    }
}

/// How refund consumption requests are answered: looked for every `interval`; a failed send
/// (429, 5xx, network) is retried after `initialRetryDelay`, doubling up to `maxRetryDelay`, until
/// the store's window closes.
public struct RefundAnswerSettings: Sendable, Hashable {
    public var interval: TimeInterval = 30
    public var initialRetryDelay: TimeInterval = 60
    public var maxRetryDelay: TimeInterval = 3600
    /// How long a claimed request is reserved for the sender that claimed it.
    public var lease: TimeInterval = 120

    public init() {}
}

/// The limits store calls are kept within, counted in storage so that instances sharing one
/// database count together.
public struct QuotaSettings: Sendable, Hashable {
    /// Per Google Cloud project (the apps whose service accounts belong to one project share it):
    /// Google's default quotas unless configured.
    public var googlePlay: QuotaLimits
    /// Per App Store app and environment: every call to the App Store Server API in bucket
    /// `app-store-server-api`; unlimited unless configured.
    public var appStore: QuotaLimits

    public init(googlePlay: QuotaLimits = .googleDefaults, appStore: QuotaLimits = .unlimited) {
        self.googlePlay = googlePlay
        self.appStore = appStore
    }
}
