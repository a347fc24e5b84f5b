import Foundation
import Storekeeper
import StorekeeperServer
import StorekeeperStorage
import Testing

/// Catch-up cursors: their stored names (which must survive upgrades) and their values.
@Suite struct CatchUpCursorTests {
    static let oldest = Date(timeIntervalSince1970: 1_700_000_000)
    static let fallback = Date(timeIntervalSince1970: 1_750_000_000)
    let history = CatchUpCursor.notificationHistory(AppID("com.example.app"), .production)

    // MARK: Names

    @Test func notificationHistoryCursorsKeepTheirStoredNames() {
        #expect(
            CatchUpCursor.notificationHistory(AppID("com.example.app"), .production).description
                == "app-store.notification-history.com.example.app.Production")
        #expect(
            CatchUpCursor.notificationHistory(AppID("com.example.app"), .sandbox).description
                == "app-store.notification-history.com.example.app.Sandbox")
    }

    @Test func voidedPurchasesCursorsKeepTheirStoredNames() {
        #expect(
            CatchUpCursor.voidedPurchases(AppID("com.example.android")).description
                == "google-play.voided-purchases.com.example.android")
    }

    @Test func aCursorIsStoredUnderItsName() async throws {
        try await TemporaryStorage.withSQLite { storage in
            try await CatchUpCursors(storage: storage).set(history, to: Date(timeIntervalSince1970: 1_800_000_000.5))
            let raw = try await storage.transaction {
                try await $0.cursor("app-store.notification-history.com.example.app.Production")
            }
            #expect(raw == "1800000000500")
        }
    }

    // MARK: Values

    @Test func aCursorRoundTripsAtMillisecondPrecision() async throws {
        try await TemporaryStorage.withSQLite { storage in
            let cursors = CatchUpCursors(storage: storage)
            try await cursors.set(history, to: Date(timeIntervalSince1970: 1_800_000_000.123_4))
            let read = try await cursors.date(history, default: Self.fallback, oldest: Self.oldest)
            #expect((read.timeIntervalSince1970 * 1000).rounded() == 1_800_000_000_123)
            #expect(abs(read.timeIntervalSince1970 - 1_800_000_000.123) < 0.000_01)
            // Setting what was read stores the same value again.
            try await cursors.set(history, to: read)
            #expect(try await cursors.date(history, default: Self.fallback, oldest: Self.oldest) == read)
        }
    }

    @Test func anUnsetCursorIsTheDefault() async throws {
        try await TemporaryStorage.withSQLite { storage in
            let read = try await CatchUpCursors(storage: storage).date(
                history, default: Self.fallback, oldest: Self.oldest)
            #expect(read == Self.fallback)
        }
    }

    @Test func aCursorNeverReadsBeforeOldest() async throws {
        try await TemporaryStorage.withSQLite { storage in
            let cursors = CatchUpCursors(storage: storage)
            let later = Date(timeIntervalSince1970: 1_760_000_000)
            #expect(
                try await cursors.date(history, default: Self.oldest.addingTimeInterval(-1), oldest: later) == later)
            try await cursors.set(history, to: Self.oldest)
            #expect(try await cursors.date(history, default: Self.fallback, oldest: later) == later)
        }
    }

    @Test func cursorsAreKeptApart() async throws {
        try await TemporaryStorage.withSQLite { storage in
            let cursors = CatchUpCursors(storage: storage)
            let sandbox = CatchUpCursor.notificationHistory(AppID("com.example.app"), .sandbox)
            let voided = CatchUpCursor.voidedPurchases(AppID("com.example.app"))
            let set = Date(timeIntervalSince1970: 1_800_000_000)
            try await cursors.set(history, to: set)
            #expect(try await cursors.date(history, default: Self.fallback, oldest: Self.oldest) == set)
            #expect(try await cursors.date(sandbox, default: Self.fallback, oldest: Self.oldest) == Self.fallback)
            #expect(try await cursors.date(voided, default: Self.fallback, oldest: Self.oldest) == Self.fallback)
        }
    }
}
