import AppStoreServer
import Configuration
public import Foundation
import GooglePlay
import Storekeeper
import StorekeeperStorage
import SystemPackage

/// One thing wrong with a configuration, located by its key path.
public struct ConfigurationProblem: Sendable, Hashable, CustomStringConvertible {
    /// Dotted key path (`apps.main.appStore.bundleId`, `products[2].kind`).
    public var path: String
    public var message: String

    public init(_ path: String, _ message: String) {
        self.path = path
        self.message = message
    }

    public var description: String { "\(path): \(message)" }
}

/// A configuration that can't be used, with every problem found (not just the first).
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public var problems: [ConfigurationProblem]

    public var description: String {
        (["configuration has \(problems.count) problem\(problems.count == 1 ? "" : "s"):"]
            + problems.map { "  \($0)" }).joined(separator: "\n")
    }
}

/// Reads a configuration file (JSON) through swift-configuration, with environment variables
/// taking precedence over the file for any key (`apps.main.appStore.keyId` ↔
/// `APPS_MAIN_APP_STORE_KEY_ID`), and checks everything it can before the server starts: files
/// exist and parse (keys, roots), enums are known, products are consistent.
public enum ConfigurationLoader {
    /// Loads and checks `path`; throws ``ConfigurationError`` listing every problem.
    public static func load(
        path: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws -> StorekeeperConfiguration {
        let fileURL = URL(fileURLWithPath: path)
        let data: Data
        do {
            data = try Data(contentsOf: fileURL)
        } catch {
            throw ConfigurationError(problems: [ConfigurationProblem(path, "can't read the file")])
        }
        guard let root = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw ConfigurationError(problems: [ConfigurationProblem(path, "is not a JSON object")])
        }
        let file: FileProvider<JSONSnapshot>
        do {
            file = try await FileProvider<JSONSnapshot>(filePath: FilePath(path))
        } catch {
            throw ConfigurationError(problems: [ConfigurationProblem(path, "\(error)")])
        }
        let reader = ConfigReader(providers: [
            EnvironmentVariablesProvider(
                environmentVariables: environment,
                secretsSpecifier: .dynamic { key, _ in key.hasSuffix("_SECRET") }
            ),
            file,
        ])
        var parse = Parse(reader: reader, root: root, directory: fileURL.deletingLastPathComponent())
        let configuration = parse.configuration()
        guard parse.problems.isEmpty else { throw ConfigurationError(problems: parse.problems) }
        return configuration
    }
}

/// One pass over a configuration, collecting problems instead of stopping at the first.
struct Parse {
    let reader: ConfigReader
    let root: [String: Any]
    let directory: URL
    var problems: [ConfigurationProblem] = []

    mutating func problem(_ path: String, _ message: String) {
        problems.append(ConfigurationProblem(path, message))
    }

    mutating func configuration() -> StorekeeperConfiguration {
        let server = HTTPSettings(
            host: string("server.host") ?? "127.0.0.1",
            port: int("server.port", in: 0...65_535) ?? 8080,
            instance: string("server.instance")
        )
        var deployment = PurchaseEnvironment.production
        if let raw = string("environment") {
            if let environment = PurchaseEnvironment(rawValue: raw.lowercased()) {
                deployment = environment
            } else {
                problem("environment", "unknown environment '\(raw)' (expected production or sandbox)")
            }
        }
        let storageURL = string("storage.url") ?? "storekeeper.sqlite"
        checkStorageURL(storageURL)
        var policies = Policies()
        if let raw = string("policies.ownershipConflict") {
            if let policy = OwnershipPolicy(rawValue: raw) {
                policies.ownershipConflict = policy
            } else {
                let known = OwnershipPolicy.allCases.map(\.rawValue).joined(separator: ", ")
                problem("policies.ownershipConflict", "unknown policy '\(raw)' (expected one of: \(known))")
            }
        }
        policies.setAppAccountToken = bool("policies.setAppAccountToken") ?? true
        if let raw = string("policies.promotionalOffers") {
            if let rule = OfferEligibility.PromotionalRule(rawValue: raw) {
                policies.promotionalOffers = rule
            } else {
                let known = OfferEligibility.PromotionalRule.allCases.map(\.rawValue).joined(separator: ", ")
                problem("policies.promotionalOffers", "unknown rule '\(raw)' (expected one of: \(known))")
            }
        }
        policies.introductoryOffersAcrossStores = bool("policies.introductoryOffersAcrossStores") ?? false
        var processing = ProcessingSettings()
        processing.initialRetryDelay = seconds("processing.initialRetryDelay") ?? processing.initialRetryDelay
        processing.maxRetryDelay = seconds("processing.maxRetryDelay") ?? processing.maxRetryDelay
        processing.pollInterval = seconds("processing.pollInterval") ?? processing.pollInterval
        processing.lease = seconds("processing.lease") ?? processing.lease
        processing.acknowledgementSweepInterval =
            seconds("processing.acknowledgementSweepInterval") ?? processing.acknowledgementSweepInterval
        processing.batchSize = int("processing.batchSize", in: 1...1000) ?? processing.batchSize
        processing.workers = int("processing.workers", in: 1...64) ?? processing.workers
        processing.jobLease = seconds("processing.jobLease")
        var catchUp = processing.catchUp
        catchUp.enabled = bool("processing.catchUp.enabled") ?? catchUp.enabled
        catchUp.interval = seconds("processing.catchUp.interval") ?? catchUp.interval
        catchUp.historyLookback = seconds("processing.catchUp.historyLookback") ?? catchUp.historyLookback
        catchUp.voidedLookback = seconds("processing.catchUp.voidedLookback") ?? catchUp.voidedLookback
        catchUp.overlap = seconds("processing.catchUp.overlap") ?? catchUp.overlap
        catchUp.overdueAfter = seconds("processing.catchUp.overdueAfter") ?? catchUp.overdueAfter
        catchUp.refreshInterval = seconds("processing.catchUp.refreshInterval") ?? catchUp.refreshInterval
        catchUp.refreshBatch = int("processing.catchUp.refreshBatch", in: 1...10_000) ?? catchUp.refreshBatch
        catchUp.awaitingNewsWatch = seconds("processing.catchUp.awaitingNewsWatch") ?? catchUp.awaitingNewsWatch
        if catchUp.awaitingNewsWatch <= catchUp.refreshInterval {
            // Within the refresh interval nothing is silent long enough to be asked about.
            problem(
                "processing.catchUp.awaitingNewsWatch",
                "must be longer than processing.catchUp.refreshInterval (\(Int(catchUp.refreshInterval)) s)")
        }
        processing.catchUp = catchUp
        var refundAnswers = processing.refundAnswers
        refundAnswers.interval = seconds("processing.refundAnswers.interval") ?? refundAnswers.interval
        refundAnswers.initialRetryDelay =
            seconds("processing.refundAnswers.initialRetryDelay") ?? refundAnswers.initialRetryDelay
        refundAnswers.maxRetryDelay = seconds("processing.refundAnswers.maxRetryDelay") ?? refundAnswers.maxRetryDelay
        refundAnswers.lease = seconds("processing.refundAnswers.lease") ?? refundAnswers.lease
        processing.refundAnswers = refundAnswers
        let quotas = self.quotas()
        let apps = self.apps()
        let catalog = self.catalog(apps: apps)
        checkSigningKeys(apps: apps, catalog: catalog)
        var configuration = StorekeeperConfiguration(
            server: server, environment: deployment, storageURL: storageURL, policies: policies, apiKeys: apiKeys(),
            apps: apps,
            catalog: catalog, processing: processing, quotas: quotas, console: console()
        )
        configuration.webhooks = webhooks()
        configuration.retention = retention()
        if catchUp.enabled, let kept = configuration.retention.notifications,
            kept < catchUp.historyLookback + catchUp.overlap
        {
            // The catch-up asks the store for what it sent in that span and stores what the inbox
            // doesn't hold: a notification pruned within it would be fetched and applied again.
            problem(
                "retention.notifications",
                "must keep notifications at least as long as processing.catchUp.historyLookback plus "
                    + "processing.catchUp.overlap: "
                    + String(format: "%.2f days", (catchUp.historyLookback + catchUp.overlap) / 86_400))
        }
        return configuration
    }

    // MARK: Retention

    mutating func retention() -> RetentionSettings {
        var settings = RetentionSettings()
        settings.events = retentionDays("retention.events", default: settings.events)
        settings.deliveryAttempts = retentionDays("retention.deliveryAttempts", default: settings.deliveryAttempts)
        settings.notifications = retentionDays("retention.notifications", default: settings.notifications)
        settings.interval = seconds("retention.interval") ?? settings.interval
        settings.batchSize = int("retention.batchSize", in: 1...100_000) ?? settings.batchSize
        return settings
    }

    /// A retention in days (fractions allowed), 0 for forever; as seconds.
    mutating func retentionDays(_ key: String, default fallback: TimeInterval?) -> TimeInterval? {
        guard let value = reader.double(forKey: ConfigKey(key)) else {
            if let text = reader.string(forKey: ConfigKey(key)) {
                problem(key, "'\(text)' is not a number of days (0: keep forever)")
            }
            return fallback
        }
        guard value >= 0, value.isFinite else {
            problem(key, "must be a number of days, 0 or more (0: keep forever)")
            return fallback
        }
        return value == 0 ? nil : value * 86_400
    }

    // MARK: Webhooks

    mutating func webhooks() -> WebhookSettings {
        var settings = WebhookSettings()
        settings.pollInterval = seconds("webhooks.pollInterval") ?? settings.pollInterval
        settings.timeout = seconds("webhooks.timeout") ?? settings.timeout
        settings.concurrency = int("webhooks.concurrency", in: 1...256) ?? settings.concurrency
        let section = root["webhooks"] as? [String: Any]
        if root["webhooks"] != nil, section == nil { problem("webhooks", "must be an object") }
        if let schedule = section?["retrySchedule"] {
            if let delays = schedule as? [Any], !delays.isEmpty,
                case let numbers = delays.compactMap({ ($0 as? NSNumber)?.doubleValue }), numbers.count == delays.count,
                numbers.allSatisfy({ $0 > 0 })
            {
                settings.retrySchedule = numbers
            } else {
                problem("webhooks.retrySchedule", "must be a non-empty list of delays in seconds, each more than 0")
            }
        }
        guard let endpoints = section?["endpoints"] else { return settings }
        guard let named = endpoints as? [String: Any] else {
            problem(
                "webhooks.endpoints", "must be an object mapping endpoint names to {url, secrets, events, environments}"
            )
            return settings
        }
        for name in named.keys.sorted() {
            if let endpoint = webhookEndpoint(name, named[name] as? [String: Any] ?? [:]) {
                settings.endpoints.append(endpoint)
            }
        }
        return settings
    }

    mutating func webhookEndpoint(_ name: String, _ entry: [String: Any]) -> WebhookEndpoint? {
        let path = "webhooks.endpoints.\(name)"
        let problemsBefore = problems.count
        var url: URL?
        if let text = string("\(path).url") {
            if let parsed = URL(string: text), let problem = WebhookEndpoint.problem(url: parsed) {
                self.problem("\(path).url", problem)
            } else if let parsed = URL(string: text) {
                url = parsed
            } else {
                problem("\(path).url", "'\(text)' is not a URL")
            }
        } else {
            problem("\(path).url", "is required (the http or https URL events are posted to)")
        }
        var types = Set<EventType>()
        if let raw = entry["events"] {
            if let names = raw as? [String] {
                for type in names.map({ EventType($0) }) {
                    if type.isKnown {
                        types.insert(type)
                    } else {
                        problem("\(path).events", WebhookEndpoint.unknownTypeMessage(type))
                    }
                }
            } else {
                problem("\(path).events", "must be a list of event types")
            }
        }
        var environments = Set<PurchaseEnvironment>()
        if let raw = entry["environments"] {
            if let names = raw as? [String] {
                for name in names {
                    if let environment = PurchaseEnvironment(rawValue: name) {
                        environments.insert(environment)
                    } else {
                        problem(
                            "\(path).environments", "unknown environment '\(name)' (expected production or sandbox)")
                    }
                }
            } else {
                problem("\(path).environments", "must be a list of environments")
            }
        }
        var rawSecrets: [String] = []
        if let raw = entry["secrets"] {
            if let list = raw as? [String] {
                rawSecrets = list
            } else {
                problem("\(path).secrets", "must be a list of one or two secrets")
            }
        } else if let single = reader.string(forKey: ConfigKey("\(path).secret"), isSecret: true) {
            rawSecrets = [single]
        }
        var secrets: [WebhookSecret] = []
        for (index, raw) in rawSecrets.enumerated() {
            if raw.isEmpty {
                problem("\(path).secrets[\(index)]", "is empty: use a long random value")
            } else if raw.utf8.count < 16 {
                problem("\(path).secrets[\(index)]", "is shorter than 16 characters; use a long random value")
            } else if let secret = try? WebhookSecret(raw) {
                secrets.append(secret)
            }
        }
        if rawSecrets.isEmpty {
            problem("\(path).secrets", "needs one or two secrets (secrets, or secret / its environment variable)")
        } else if rawSecrets.count > 2 {
            problem("\(path).secrets", "has \(rawSecrets.count) secrets: one, or two while rotating")
        }
        guard problems.count == problemsBefore, let url else { return nil }
        return try? WebhookEndpoint(
            name: name, url: url, eventTypes: types, environments: environments, secrets: secrets)
    }

    // MARK: Quotas

    /// Google's buckets by their configuration key.
    static let googlePlayBuckets: [(key: String, bucket: QuotaBucket)] = [
        ("subscriptions", .subscriptions), ("subscriptionUpdates", .subscriptionUpdates),
        ("oneTimePurchases", .oneTimePurchases), ("orders", .orders), ("voidedPurchases", .voidedPurchases),
    ]

    mutating func quotas() -> QuotaSettings {
        var settings = QuotaSettings()
        for (key, bucket) in Self.googlePlayBuckets {
            if let limits = quotaLimits("quotas.googlePlay.\(key)") { settings.googlePlay.buckets[bucket] = limits }
        }
        if let overall = quotaLimits("quotas.googlePlay.overall") { settings.googlePlay.overall = overall }
        if let wait = seconds("quotas.googlePlay.maxWait") { settings.googlePlay.maxWait = .seconds(wait) }
        if let overall = quotaLimits("quotas.appStore.overall") { settings.appStore.overall = overall }
        if let wait = seconds("quotas.appStore.maxWait") { settings.appStore.maxWait = .seconds(wait) }
        return settings
    }

    /// Limits written `"<requests>/<seconds>s"`, several separated by commas (`"30/30s, 6000/86400s"`),
    /// or `none`.
    mutating func quotaLimits(_ key: String) -> [QuotaLimit]? {
        guard let text = string(key) else { return nil }
        if text.trimmingCharacters(in: .whitespaces).lowercased() == "none" { return [] }
        var limits: [QuotaLimit] = []
        for part in text.split(separator: ",") {
            let pieces = part.trimmingCharacters(in: .whitespaces).split(separator: "/")
            guard pieces.count == 2, let requests = Int(pieces[0].trimmingCharacters(in: .whitespaces)),
                requests > 0, pieces[1].hasSuffix("s"),
                let seconds = Double(pieces[1].dropLast().trimmingCharacters(in: .whitespaces)), seconds > 0
            else {
                problem(key, "'\(text)' is not a list of limits like \"3000/60s, 200000/86400s\" (or none)")
                return nil
            }
            limits.append(QuotaLimit(requests: requests, per: .milliseconds(Int64((seconds * 1000).rounded()))))
        }
        return limits
    }

    // MARK: Sections

    mutating func apiKeys() -> [ConfiguredAPIKey] {
        guard let section = root["apiKeys"] else {
            problem("apiKeys", "no API keys: every request to /v1/customers would be refused")
            return []
        }
        guard let keys = section as? [String: Any], !keys.isEmpty else {
            problem("apiKeys", "must be an object mapping key names to {scope, secret | secretFile}")
            return []
        }
        var result: [ConfiguredAPIKey] = []
        for name in keys.keys.sorted() {
            let path = "apiKeys.\(name)"
            let rawScope = string("\(path).scope") ?? "secret"
            guard let scope = APIKeyRecord.Scope(rawValue: rawScope) else {
                let known = APIKeyRecord.Scope.allCases.map(\.rawValue).joined(separator: ", ")
                problem("\(path).scope", "unknown scope '\(rawScope)' (expected one of: \(known))")
                continue
            }
            guard let secret = secretValue(path) else { continue }
            if secret.utf8.count < 16 {
                problem("\(path).secret", "is shorter than 16 characters; use a long random value")
                continue
            }
            result.append(ConfiguredAPIKey(name: name, scope: scope, secret: secret))
        }
        return result
    }

    mutating func apps() -> [AppConfiguration] {
        guard let section = root["apps"] as? [String: Any], !section.isEmpty else {
            problem("apps", "no apps configured: add at least one with an appStore or googlePlay part")
            return []
        }
        var result: [AppConfiguration] = []
        for name in section.keys.sorted() {
            let path = "apps.\(name)"
            guard name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                problem(path, "app names may contain only letters, digits, '-' and '_'")
                continue
            }
            let entry = section[name] as? [String: Any] ?? [:]
            var app = AppConfiguration(name: name)
            if entry["appStore"] != nil { app.appStore = appStore("\(path).appStore") }
            if entry["googlePlay"] != nil { app.googlePlay = googlePlay("\(path).googlePlay") }
            if entry["appStore"] == nil && entry["googlePlay"] == nil {
                problem(path, "has neither an appStore nor a googlePlay part")
            }
            result.append(app)
        }
        checkUnique(result, "appStore.bundleId", \.appStore?.bundleID)
        checkUnique(result, "googlePlay.packageName", \.googlePlay?.packageName)
        return result
    }

    /// Two apps of one store with the same id would make every payload ambiguous.
    mutating func checkUnique(_ apps: [AppConfiguration], _ key: String, _ id: KeyPath<AppConfiguration, String?>) {
        var owners: [String: String] = [:]
        for app in apps {
            guard let value = app[keyPath: id] else { continue }
            if let first = owners[value] {
                problem(
                    "apps.\(app.name).\(key)", "'\(value)' is also the \(key) of apps.\(first); each app needs its own")
            } else {
                owners[value] = app.name
            }
        }
    }

    mutating func appStore(_ path: String) -> AppStoreAppConfiguration? {
        guard let bundleID = requiredString("\(path).bundleId") else { return nil }
        var app = AppStoreAppConfiguration(bundleID: bundleID)
        if let raw = string("\(path).appAppleId") ?? int("\(path).appAppleId").map(String.init) {
            if let id = Int64(raw) { app.appAppleID = id } else { problem("\(path).appAppleId", "is not a number") }
        }
        if let names = stringArray("\(path).environments") {
            app.environments = []
            for name in names {
                guard let environment = PurchaseEnvironment(rawValue: name.lowercased()) else {
                    problem("\(path).environments", "unknown environment '\(name)' (expected Production or Sandbox)")
                    continue
                }
                app.environments.append(environment)
            }
        }
        app.sandboxGrantsAccess = bool("\(path).sandboxGrantsAccess") ?? false
        if app.environments.contains(.production) && app.appAppleID == nil {
            problem("\(path).appAppleId", "is required to accept Production payloads")
        }
        app.keyID = string("\(path).keyId")
        app.issuerID = string("\(path).issuerId")
        app.privateKeyPath = file("\(path).privateKeyPath")
        let apiParts = [app.keyID, app.issuerID, app.privateKeyPath].compactMap { $0 }.count
        if apiParts != 0 && apiParts != 3 {
            problem(path, "keyId, issuerId and privateKeyPath go together (set all three or none)")
        }
        if let keyPath = app.privateKeyPath, let keyID = app.keyID {
            do {
                _ = try AppStoreSigningKey(contentsOfFile: keyPath, keyId: keyID)
            } catch {
                problem("\(path).privateKeyPath", "\(error.reason.rawValue): \(error.detail)")
            }
        }
        app.appleRootFiles = files("\(path).appleRootFiles")
        app.allowedRootFiles = files("\(path).allowedRootFiles")
        if app.appleRootFiles.isEmpty && app.allowedRootFiles.isEmpty {
            problem("\(path).appleRootFiles", "no root certificates: nothing signed by Apple could be verified")
        } else {
            do {
                _ = try TrustedRoots(appleRootFiles: app.appleRootFiles, allowedRootFiles: app.allowedRootFiles)
            } catch {
                problem("\(path).appleRootFiles", "\(error)")
            }
        }
        app.apiBaseURL = url("\(path).apiBaseUrl")
        app.sandboxAPIBaseURL = url("\(path).sandboxApiBaseUrl")
        if let raw = rawValue(at: "\(path).refundPolicy"),
            let policy = refundPolicyOverride(raw, path: "\(path).refundPolicy")
        {
            app.refundPolicy = RefundPolicy().overridden(by: policy)
        }
        return app
    }

    /// The raw JSON value at a dotted key path of the file (for sections read as a whole).
    func rawValue(at path: String) -> Any? {
        var value: Any? = root
        for key in path.split(separator: ".") { value = (value as? [String: Any])?[String(key)] }
        return value
    }

    /// Promotional offers listed in the catalog are signed with each App Store app's key: an app
    /// without one could not sign them (the endpoint would answer `not-configured`).
    mutating func checkSigningKeys(apps: [AppConfiguration], catalog: Catalog) {
        guard catalog.allProducts.contains(where: { !$0.promotionalOffers.isEmpty }) else { return }
        for app in apps {
            guard let appStore = app.appStore, appStore.keyID == nil || appStore.privateKeyPath == nil else { continue }
            problem(
                "apps.\(app.name).appStore",
                "the catalog lists promotional offers, but this app has no signing key: set keyId, issuerId and privateKeyPath"
            )
        }
    }

    /// A refund policy (docs/configuration.md, "Refund policy"): `answer`, `preference`,
    /// `sampleContentProvided`, each optional.
    mutating func refundPolicyOverride(_ raw: Any, path: String) -> RefundPolicyOverride? {
        guard let entry = raw as? [String: Any] else {
            problem(path, "must be an object with answer, preference and/or sampleContentProvided")
            return nil
        }
        var policy = RefundPolicyOverride()
        for key in entry.keys.sorted() where !["answer", "preference", "sampleContentProvided"].contains(key) {
            problem("\(path).\(key)", "unknown key (expected answer, preference or sampleContentProvided)")
        }
        if let answer = entry["answer"] {
            if let answer = answer as? Bool {
                policy.answer = answer
            } else {
                problem("\(path).answer", "is not true or false")
            }
        }
        if let sample = entry["sampleContentProvided"] {
            if let sample = sample as? Bool {
                policy.sampleContentProvided = sample
            } else {
                problem("\(path).sampleContentProvided", "is not true or false")
            }
        }
        if let preference = entry["preference"] {
            policy.preference = refundPreferenceRule(preference, path: "\(path).preference")
        }
        return policy
    }

    /// `none`, `GRANT_FULL`, `GRANT_PRORATED`, `DECLINE`, or
    /// `{"declineAboveConsumedPercent": 50, "otherwise": "GRANT_PRORATED"}`.
    mutating func refundPreferenceRule(_ raw: Any, path: String) -> RefundPreferenceRule? {
        let names = (["none"] + RefundPreference.allCases.map(\.rawValue)).joined(separator: ", ")
        if let name = raw as? String {
            if name == "none" { return .noPreference }
            guard let preference = RefundPreference(rawValue: name) else {
                problem(path, "unknown preference '\(name)' (expected one of: \(names), or a rule object)")
                return nil
            }
            return .fixed(preference)
        }
        guard let rule = raw as? [String: Any] else {
            problem(path, "must be one of \(names), or {\"declineAboveConsumedPercent\": N, \"otherwise\": …}")
            return nil
        }
        for key in rule.keys.sorted() where !["declineAboveConsumedPercent", "otherwise"].contains(key) {
            problem("\(path).\(key)", "unknown key (expected declineAboveConsumedPercent and otherwise)")
        }
        guard let threshold = (rule["declineAboveConsumedPercent"] as? NSNumber)?.doubleValue,
            (0...100).contains(threshold)
        else {
            problem("\(path).declineAboveConsumedPercent", "must be a number from 0 to 100")
            return nil
        }
        guard let otherwiseName = rule["otherwise"] as? String,
            let otherwise = RefundPreference(rawValue: otherwiseName),
            otherwise != .decline
        else {
            problem("\(path).otherwise", "must be GRANT_FULL or GRANT_PRORATED")
            return nil
        }
        return .byConsumedShare(declineAbovePercent: threshold, otherwise: otherwise)
    }

    /// `revoke` (the default), `keep`, or `{"revokeFromPercent": N}`.
    mutating func proratedRefundRule(_ raw: Any, path: String) -> ProratedRefundRule? {
        switch raw {
        case let name as String where name == "revoke": return .revoke
        case let name as String where name == "keep": return .keep
        case let rule as [String: Any]:
            guard rule.count == 1, let percent = (rule["revokeFromPercent"] as? NSNumber)?.doubleValue,
                (0...100).contains(percent)
            else {
                problem(path, "must be {\"revokeFromPercent\": N} with N from 0 to 100")
                return nil
            }
            return .revokeFromPercent(percent)
        default:
            problem(path, "must be revoke, keep or {\"revokeFromPercent\": N}")
            return nil
        }
    }

    mutating func googlePlay(_ path: String) -> GooglePlayAppConfiguration? {
        guard let packageName = requiredString("\(path).packageName") else { return nil }
        var app = GooglePlayAppConfiguration(packageName: packageName)
        app.serviceAccountKeyPath = file("\(path).serviceAccountKeyPath")
        if let keyPath = app.serviceAccountKeyPath {
            do {
                _ = try ServiceAccountKey(contentsOfFile: keyPath)
            } catch {
                problem("\(path).serviceAccountKeyPath", "\(error)")
            }
        } else {
            problem(
                "\(path).serviceAccountKeyPath", "is required: Google Play purchases can only be read through the API")
        }
        app.pushAudience = string("\(path).pushAudience")
        app.pushServiceAccount = string("\(path).pushServiceAccount")
        if app.pushAudience == nil || app.pushServiceAccount == nil {
            problem(path, "pushAudience and pushServiceAccount are required to authenticate Pub/Sub pushes")
        }
        app.apiBaseURL = url("\(path).apiBaseUrl")
        app.jwksURL = url("\(path).jwksUrl")
        app.testPurchasesGrantAccess = bool("\(path).testPurchasesGrantAccess") ?? false
        return app
    }

    /// `products.appStore` and `products.googlePlay`, each mapping product ids to what they grant.
    mutating func catalog(apps: [AppConfiguration]) -> Catalog {
        guard let section = root["products"] as? [String: Any], !section.isEmpty else {
            problem("products", "no products: add products.appStore and/or products.googlePlay")
            return Catalog()
        }
        var products: [CatalogProduct] = []
        for storeKey in section.keys.sorted() {
            let store: Store
            switch storeKey {
            case "appStore": store = .appStore
            case "googlePlay": store = .googlePlay
            default:
                problem("products.\(storeKey)", "unknown store (expected appStore or googlePlay)")
                continue
            }
            guard let entries = section[storeKey] as? [String: Any] else {
                problem("products.\(storeKey)", "must map product ids to {kind, entitlements | balance+credits}")
                continue
            }
            if !apps.contains(where: { store == .appStore ? $0.appStore != nil : $0.googlePlay != nil }) {
                problem("products.\(storeKey)", "no app has a \(storeKey) part")
            }
            for id in entries.keys.sorted() {
                if let product = product(id, store: store, entry: entries[id], path: "products.\(storeKey).\(id)") {
                    products.append(product)
                }
            }
        }
        return Catalog(products)
    }

    mutating func product(_ id: String, store: Store, entry: Any?, path: String) -> CatalogProduct? {
        guard let entry = entry as? [String: Any] else {
            problem(path, "must be an object")
            return nil
        }
        let kinds = ProductKind.allCases.map(\.rawValue).joined(separator: ", ")
        guard let kindName = entry["kind"] as? String, let kind = ProductKind(rawValue: kindName) else {
            problem("\(path).kind", "must be one of: \(kinds)")
            return nil
        }
        let entitlements = entry["entitlements"] as? [String] ?? []
        let balance = entry["balance"] as? String
        let credits = entry["credits"] as? Int ?? 0
        if kind == .consumable {
            if balance == nil || credits <= 0 {
                problem(path, "a consumable needs a balance name and credits > 0")
            }
            if !entitlements.isEmpty {
                // Neither the customer view nor events would grant them: say so rather than ignore.
                problem("\(path).entitlements", "a consumable credits its balance and grants no entitlement")
            }
        } else if entitlements.isEmpty {
            problem("\(path).entitlements", "a \(kind.rawValue) product must grant at least one entitlement")
        }
        var product = CatalogProduct(
            id: id, store: store, kind: kind, entitlements: entitlements, balance: balance, credits: credits,
            group: entry["group"] as? String
        )
        if let raw = entry["proratedRefund"] {
            if kind == .subscription || kind == .consumable {
                problem(
                    "\(path).proratedRefund",
                    "applies to non-consumables and non-renewing subscriptions only (a \(kind.rawValue) is refunded by transaction or by share)"
                )
            } else if let rule = proratedRefundRule(raw, path: "\(path).proratedRefund") {
                product.proratedRefund = rule
            }
        }
        if let raw = entry["promotionalOffers"] {
            if let offers = raw as? [String], store == .appStore, kind == .subscription,
                offers.allSatisfy({ !$0.isEmpty })
            {
                product.promotionalOffers = offers
            } else {
                problem(
                    "\(path).promotionalOffers",
                    "must be a list of offer ids, on an App Store subscription (promotional offers are Apple's)")
            }
        }
        if let raw = entry["refundPolicy"] {
            if store != .appStore {
                problem("\(path).refundPolicy", "only App Store products are asked for consumption information")
            } else {
                product.refundPolicy = refundPolicyOverride(raw, path: "\(path).refundPolicy")
            }
        }
        return product
    }

    // MARK: Values

    func string(_ key: String) -> String? {
        reader.string(forKey: ConfigKey(key)).flatMap { $0.isEmpty ? nil : $0 }
    }

    mutating func requiredString(_ key: String) -> String? {
        guard let value = string(key) else {
            problem(key, "is required")
            return nil
        }
        return value
    }

    mutating func int(_ key: String, in range: ClosedRange<Int>? = nil) -> Int? {
        guard let value = reader.int(forKey: ConfigKey(key)) else {
            if let text = reader.string(forKey: ConfigKey(key)) { problem(key, "'\(text)' is not an integer") }
            return nil
        }
        if let range, !range.contains(value) {
            problem(key, "\(value) is outside \(range.lowerBound)...\(range.upperBound)")
            return nil
        }
        return value
    }

    mutating func seconds(_ key: String) -> TimeInterval? {
        guard let value = reader.double(forKey: ConfigKey(key)) else {
            if let text = reader.string(forKey: ConfigKey(key)) { problem(key, "'\(text)' is not a number of seconds") }
            return nil
        }
        guard value > 0 else {
            problem(key, "must be more than 0 seconds")
            return nil
        }
        return value
    }

    mutating func bool(_ key: String) -> Bool? {
        guard let value = reader.bool(forKey: ConfigKey(key)) else {
            if let text = reader.string(forKey: ConfigKey(key)) { problem(key, "'\(text)' is not true or false") }
            return nil
        }
        return value
    }

    func stringArray(_ key: String) -> [String]? {
        reader.stringArray(forKey: ConfigKey(key))
    }

    mutating func url(_ key: String) -> String? {
        guard let value = string(key) else { return nil }
        guard let url = URL(string: value), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
            problem(key, "'\(value)' is not an http(s) URL")
            return nil
        }
        return value
    }

    /// A file path, resolved against the configuration file's folder, that must exist.
    mutating func file(_ key: String) -> String? {
        guard let value = string(key) else { return nil }
        return existingFile(key, value)
    }

    mutating func files(_ key: String) -> [String] {
        (stringArray(key) ?? []).compactMap { existingFile(key, $0) }
    }

    mutating func existingFile(_ key: String, _ value: String) -> String? {
        let resolved = value.hasPrefix("/") ? value : directory.appendingPathComponent(value).path
        guard FileManager.default.isReadableFile(atPath: resolved) else {
            problem(key, "file \(resolved) does not exist or is not readable")
            return nil
        }
        return resolved
    }

    /// A secret given inline (`secret`, or its environment variable) or as a file (`secretFile`).
    mutating func secretValue(_ path: String) -> String? {
        if let inline = reader.string(forKey: ConfigKey("\(path).secret"), isSecret: true), !inline.isEmpty {
            return inline
        }
        if let file = file("\(path).secretFile") {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                problem("\(path).secretFile", "can't be read as UTF-8 text")
                return nil
            }
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        problem(path, "needs secret (or the environment variable for it) or secretFile")
        return nil
    }

    /// Parsed the way the storage will open it, so the check and the server agree.
    mutating func checkStorageURL(_ value: String) {
        do {
            _ = try StorageFactory.Location(value)
        } catch let error as StorageError {
            problem("storage.url", error.detail)
        } catch {
            problem("storage.url", "\(error)")
        }
    }
}
