import Foundation

/// The SQL that fills a migrated Storekeeper database with `customers` customers and what they
/// bought, generated inside the database (SQLite: a recursive CTE; PostgreSQL: `generate_series`)
/// so that seeding costs no round trip per row. Everything is derived from the customer's number
/// by fixed hash functions: the same `customers` gives the same database on both backends and on
/// every run.
///
/// Per customer (shares are of customers):
/// - 55%: an App Store subscription (`pro.monthly`, a fifth `max.monthly`), 30%: a Google Play one
///   (`premium`, a seventh `premium.max`); each with 1–12 monthly renewals (a billing event and a
///   state change each). Of these, per mille: 680 active, 2 active but past their expiry (a missed
///   renewal: what the overdue refresh finds), 100 canceled, 150 expired, 40 in grace, 28 in billing
///   retry; one Google subscription in 2000 still waits to be acknowledged; 1 in 50 App Store ones
///   is family shared; 1 customer in 100 is a sandbox tester.
/// - consumables: none for 30%, 1 for 20%, 2 for 20%, 3, 4 or 8 for 10% each (App Store
///   `coins.100` or Google `gems`), each its own purchase with one billing event, one state change
///   and one ledger credit; customers with consumables spent 0–2 times 5 coins.
/// - 5%: a Google Play `lifetime` unlock.
/// - one processed notification in the inbox (a 200-byte body: its size does not matter here).
///
/// For 1,000,000 customers: about 3.0 M purchases, 7.7 M billing events, 8.0 M state changes,
/// 2.8 M ledger entries and 1 M inbox rows.
struct SeedSQL {
    enum Dialect {
        case sqlite
        case postgresql
    }

    /// Bump when the generated data changes: cached databases of another version are not reused.
    static let version = 1
    /// The moment the seeded data describes; the benchmark's server runs its clock from here.
    static let now = Date(timeIntervalSince1970: 1_767_225_600)
    static let nowMilliseconds: Int64 = 1_767_225_600_000
    static let day: Int64 = 86_400_000
    static let period: Int64 = 30 * day

    let dialect: Dialect
    let customers: Int

    /// The id of customer `number` (1...customers).
    static func customerID(_ number: Int) -> String {
        "customer-" + String(repeating: "0", count: max(0, 7 - String(number).count)) + String(number)
    }

    // Multiplicative hashes modulo the prime 2^31 - 1, one multiplier per property: consecutive
    // customers get unrelated values, and properties don't follow each other.
    private static let prime: Int64 = 2_147_483_647
    private static let multipliers: [Int64] = [
        1_103_515_245, 1_597_334_677, 1_299_709_123, 1_787_253_841, 1_948_765_723, 1_162_261_467, 1_400_305_337,
        1_720_401_317, 1_073_741_827, 1_234_567_891, 1_987_654_321, 1_597_463_007, 1_500_450_271, 1_327_217_885,
        1_860_498_091, 1_111_111_121, 1_318_699_463,
    ]

    private func hash(_ property: Int, of column: String = "i") -> String {
        "((\(column) * \(Self.multipliers[property])) % \(Self.prime))"
    }

    private func padded(_ expression: String, _ width: Int) -> String {
        switch dialect {
        case .sqlite: "printf('%0\(width)d', \(expression))"
        case .postgresql: "lpad(CAST(\(expression) AS TEXT), \(width), '0')"
        }
    }

    private func hex12(_ expression: String) -> String {
        switch dialect {
        case .sqlite: "printf('%012x', \(expression))"
        case .postgresql: "lpad(to_hex(\(expression)), 12, '0')"
        }
    }

    private func boolean(_ value: Bool) -> String {
        switch dialect {
        case .sqlite: value ? "1" : "0"
        case .postgresql: value ? "TRUE" : "FALSE"
        }
    }

    /// A `WITH` clause defining `name(k)` as 1...count.
    private func numbers(_ name: String, _ count: Int) -> String {
        switch dialect {
        case .sqlite:
            "WITH RECURSIVE \(name)(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM \(name) WHERE k < \(count))"
        case .postgresql: "WITH \(name)(k) AS (SELECT CAST(generate_series(1, \(count)) AS BIGINT))"
        }
    }

    private var smallBody: String {
        switch dialect {
        case .sqlite: "zeroblob(200)"
        case .postgresql: "decode(repeat('00', 200), 'hex')"
        }
    }

    private var now: Int64 { Self.nowMilliseconds }
    private var day: Int64 { Self.day }

    /// A subscription's state from a per-mille bucket.
    private func state(_ bucket: String) -> String {
        """
        CASE WHEN \(bucket) < 682 THEN 'active' WHEN \(bucket) < 782 THEN 'canceled'
          WHEN \(bucket) < 932 THEN 'expired' WHEN \(bucket) < 972 THEN 'grace_period' ELSE 'billing_retry' END
        """
    }

    /// Its expiry: ahead for active and canceled ones (behind for the 2 per mille overdue),
    /// behind for the others.
    private func expires(_ bucket: String, _ days: String) -> String {
        """
        CASE WHEN \(bucket) < 680 OR (\(bucket) >= 682 AND \(bucket) < 782) THEN \(now) + \(days) * \(day)
          WHEN \(bucket) < 682 THEN \(now) - (\(days) % 3 + 1) * \(day)
          WHEN \(bucket) < 932 THEN \(now) - \(days) * 10 * \(day)
          WHEN \(bucket) < 972 THEN \(now) - (\(days) % 5 + 1) * \(day)
          ELSE \(now) - (\(days) % 50 + 1) * \(day) END
        """
    }

    private func subscriptions(
        store: String, id: String, product: String, app: String, renewals: String, bucket: String, days: String,
        graceDays: Int, acknowledgement: String, ownership: String
    ) -> String {
        """
        SELECT i, cid, token, '\(store)' AS store, \(id) AS pid, \(product) AS product, '\(app)' AS app,
          \(renewals) AS n, \(state(bucket)) AS state, \(expires(bucket, days)) AS expires_at,
          CASE WHEN \(bucket) >= 932 AND \(bucket) < 972 THEN \(expires(bucket, days)) + \(graceDays) * \(day) END
            AS grace_at,
          \(ownership) AS ownership, \(acknowledgement) AS ack, sandbox
        """
    }

    private static let purchaseColumns = """
        store, id, customer_id, app, product_id, kind, environment, state, expires_at, grace_period_expires_at,
          auto_renew, ownership, quantity, account_hint, observed_at, needs_acknowledgement
        """
    private static let transactionColumns = """
        store, id, purchase_id, product_id, purchased_at, quantity, revoked_at, refunded_fraction, observed_at
        """
    private static let stateChangeColumns = """
        store, purchase_id, from_state, to_state, expires_at, observed_at, cause_source, cause_event, cause_reference
        """
    private static let ledgerColumns = """
        customer_id, balance, amount, reason, idempotency_key, transaction_id, created_at
        """
    private static let environment = "CASE WHEN sandbox THEN 'sandbox' ELSE 'production' END"

    /// The statements, in order, to run in one transaction on a migrated, empty database. They
    /// create, fill and drop three temporary tables (the plan per customer, its subscriptions,
    /// its consumables).
    var statements: [String] {
        let customerNumber = padded("i", 7)
        // The last renewal was a period before the current expiry; a subscription that left
        // `active` was last observed when it did.
        let observed = """
            CASE WHEN state IN ('active', 'canceled') THEN expires_at - \(Self.period) + 60000 ELSE expires_at + 60000 END
            """
        let renewalID = """
            CASE WHEN store = 'app_store'
              THEN (CASE WHEN k = 1 THEN pid ELSE '3' || \(customerNumber) || \(padded("k", 3)) END)
              ELSE 'GPA.3' || \(customerNumber) || '..' || (k - 1) END
            """
        let lifetimeID = "'gp.' || \(customerNumber) || '.lifetime'"
        let lifetimeAt = "\(now) - (i % 200 + 1) * \(day)"
        let consumableFromAppStore = "(i + k) % 10 < 7"
        return [
            """
            CREATE TEMP TABLE seed_customers AS
            \(numbers("seq", customers))
            SELECT k AS i, 'customer-' || \(padded("k", 7)) AS cid,
              '00000000-0000-4000-8000-' || \(hex12("k")) AS token,
              CASE WHEN \(hash(0, of: "k")) % 100 < 55
                THEN (CASE WHEN \(hash(1, of: "k")) % 5 = 0 THEN 'max.monthly' ELSE 'pro.monthly' END) END AS a_product,
              1 + \(hash(2, of: "k")) % 12 AS a_n, \(hash(3, of: "k")) % 1000 AS a_bucket,
              1 + \(hash(4, of: "k")) % 30 AS a_days,
              CASE WHEN \(hash(5, of: "k")) % 100 < 30
                THEN (CASE WHEN \(hash(6, of: "k")) % 7 = 0 THEN 'premium.max' ELSE 'premium' END) END AS g_product,
              1 + \(hash(7, of: "k")) % 12 AS g_n, \(hash(8, of: "k")) % 1000 AS g_bucket,
              1 + \(hash(9, of: "k")) % 30 AS g_days, \(hash(10, of: "k")) % 2000 = 0 AS g_ack,
              CASE \(hash(11, of: "k")) % 10 WHEN 0 THEN 0 WHEN 1 THEN 0 WHEN 2 THEN 0 WHEN 3 THEN 1 WHEN 4 THEN 1
                WHEN 5 THEN 2 WHEN 6 THEN 2 WHEN 7 THEN 3 WHEN 8 THEN 4 ELSE 8 END AS c_n,
              \(hash(12, of: "k")) % 3 AS d_n, \(hash(13, of: "k")) % 100 < 5 AS lifetime,
              \(hash(14, of: "k")) % 50 = 0 AS family, \(hash(16, of: "k")) % 100 = 0 AS sandbox
            FROM seq
            """,
            """
            CREATE TEMP TABLE seed_subscriptions AS
            \(subscriptions(
                store: "app_store", id: "'20000' || \(customerNumber)", product: "a_product",
                app: "com.example.storekeeper", renewals: "a_n", bucket: "a_bucket", days: "a_days", graceDays: 16,
                acknowledgement: boolean(false),
                ownership: "CASE WHEN family THEN 'family_shared' ELSE 'purchased' END"))
            FROM seed_customers WHERE a_product IS NOT NULL
            UNION ALL
            \(subscriptions(
                store: "google_play", id: "'gp.' || \(customerNumber) || '.sub.' || \(hex12(hash(15)))",
                product: "g_product", app: "com.example.storekeeper.android", renewals: "g_n", bucket: "g_bucket",
                days: "g_days", graceDays: 7, acknowledgement: "g_ack", ownership: "'purchased'"))
            FROM seed_customers WHERE g_product IS NOT NULL
            """,
            """
            INSERT INTO customers (id, app_account_token, created_at)
            SELECT cid, token, \(now) - (400 + i % 300) * \(day) FROM seed_customers
            """,
            """
            INSERT INTO purchases (\(Self.purchaseColumns))
            SELECT store, pid, cid, app, product, 'subscription', \(Self.environment), state, expires_at, grace_at,
              state IN ('active', 'grace_period', 'billing_retry'), ownership, 1, token,
              CASE WHEN ack THEN \(now) - (i % 72) * 3600000 ELSE \(observed) END, ack
            FROM seed_subscriptions
            """,
            // Renewal history: a billing event per period, each with the state change it brought.
            """
            INSERT INTO transactions (\(Self.transactionColumns))
            \(numbers("renewal", 12))
            SELECT store, \(renewalID), pid, product, expires_at - (n - k + 1) * \(Self.period), 1, NULL, 0,
              expires_at - (n - k + 1) * \(Self.period) + 60000
            FROM seed_subscriptions JOIN renewal ON k <= n
            """,
            """
            INSERT INTO state_changes (\(Self.stateChangeColumns))
            \(numbers("renewal", 12))
            SELECT store, pid, CASE WHEN k = 1 THEN NULL ELSE 'active' END, 'active',
              expires_at - (n - k) * \(Self.period), expires_at - (n - k + 1) * \(Self.period) + 60000, 'notification',
              CASE WHEN store = 'app_store' THEN (CASE WHEN k = 1 THEN 'SUBSCRIBED' ELSE 'DID_RENEW' END)
                ELSE (CASE WHEN k = 1 THEN 'SUBSCRIPTION_PURCHASED' ELSE 'SUBSCRIPTION_RENEWED' END) END,
              \(renewalID)
            FROM seed_subscriptions JOIN renewal ON k <= n
            """,
            """
            INSERT INTO state_changes (\(Self.stateChangeColumns))
            SELECT store, pid, 'active', state, expires_at, \(observed), 'notification',
              CASE state WHEN 'canceled' THEN 'DID_CHANGE_RENEWAL_STATUS' WHEN 'expired' THEN 'EXPIRED'
                ELSE 'DID_FAIL_TO_RENEW' END,
              pid
            FROM seed_subscriptions WHERE state <> 'active'
            """,
            // Consumables: each its own purchase, billing event and credit.
            """
            CREATE TEMP TABLE seed_consumables AS
            \(numbers("item", 8))
            SELECT i, cid, token, sandbox,
              CASE WHEN \(consumableFromAppStore) THEN 'app_store' ELSE 'google_play' END AS store,
              CASE WHEN \(consumableFromAppStore) THEN '4' || \(customerNumber) || \(padded("k", 2))
                ELSE 'gp.' || \(customerNumber) || '.c' || k END AS pid,
              CASE WHEN \(consumableFromAppStore) THEN '4' || \(customerNumber) || \(padded("k", 2))
                ELSE 'GPA.4' || \(customerNumber) || '-' || k END AS txid,
              CASE WHEN \(consumableFromAppStore) THEN 'coins.100' ELSE 'gems' END AS product,
              CASE WHEN \(consumableFromAppStore) THEN 'com.example.storekeeper'
                ELSE 'com.example.storekeeper.android' END AS app,
              CASE WHEN \(consumableFromAppStore) THEN 100 ELSE 10 END AS credits,
              \(now) - (k * 7 + i % 7) * \(day) AS at
            FROM seed_customers JOIN item ON k <= c_n
            """,
            """
            INSERT INTO purchases (\(Self.purchaseColumns))
            SELECT store, pid, cid, app, product, 'consumable', \(Self.environment), 'active', NULL, NULL, NULL,
              'purchased', 1, token, at, \(boolean(false))
            FROM seed_consumables
            """,
            """
            INSERT INTO transactions (\(Self.transactionColumns))
            SELECT store, txid, pid, product, at - 60000, 1, NULL, 0, at FROM seed_consumables
            """,
            """
            INSERT INTO state_changes (\(Self.stateChangeColumns))
            SELECT store, pid, NULL, 'active', NULL, at, 'notification', 'ONE_TIME_CHARGE', txid FROM seed_consumables
            """,
            """
            INSERT INTO ledger_entries (\(Self.ledgerColumns))
            SELECT cid, 'coins', credits, 'purchase', store || ':' || txid || ':' || at || ':' || credits, txid, at
            FROM seed_consumables
            """,
            """
            INSERT INTO ledger_entries (\(Self.ledgerColumns))
            \(numbers("spend", 2))
            SELECT cid, 'coins', -5, 'debit', 'debit:seed-' || i || '-' || k, NULL, \(now) - k * \(day)
            FROM seed_customers JOIN spend ON k <= d_n WHERE c_n > 0
            """,
            // Lifetime unlocks (Google Play, non-consumable).
            """
            INSERT INTO purchases (\(Self.purchaseColumns))
            SELECT 'google_play', \(lifetimeID), cid, 'com.example.storekeeper.android', 'lifetime', 'non_consumable',
              \(Self.environment), 'active', NULL, NULL, NULL, 'purchased', 1, token, \(lifetimeAt), \(boolean(false))
            FROM seed_customers WHERE lifetime
            """,
            """
            INSERT INTO transactions (\(Self.transactionColumns))
            SELECT 'google_play', 'GPA.5' || \(customerNumber), \(lifetimeID), 'lifetime', \(lifetimeAt) - 60000, 1,
              NULL, 0, \(lifetimeAt)
            FROM seed_customers WHERE lifetime
            """,
            """
            INSERT INTO state_changes (\(Self.stateChangeColumns))
            SELECT 'google_play', \(lifetimeID), NULL, 'active', NULL, \(lifetimeAt), 'notification',
              'ONE_TIME_PRODUCT_PURCHASED', 'GPA.5' || \(customerNumber)
            FROM seed_customers WHERE lifetime
            """,
            // The inbox keeps what it processed.
            """
            INSERT INTO inbox (store, dedupe_key, received_at, status, attempts, next_attempt_at, last_error,
              processed_at)
            SELECT CASE WHEN i % 3 = 0 THEN 'google_play' ELSE 'app_store' END, 'seed-' || \(customerNumber),
              \(now) - (i % 30) * \(day) - i % \(day), 'processed', 1, NULL, NULL,
              \(now) - (i % 30) * \(day) - i % \(day) + 50
            FROM seed_customers
            """,
            "INSERT INTO inbox_payloads (store, dedupe_key, body) SELECT store, dedupe_key, \(smallBody) FROM inbox",
            "DROP TABLE seed_consumables",
            "DROP TABLE seed_subscriptions",
            "DROP TABLE seed_customers",
        ]
    }
}
