import Foundation
import Synchronization

/// Notifications this process verified and decoded at the webhook, for processing on the same
/// instance to take instead of decoding the record kept with the stored row again (the decoding was
/// about 3 % of the ingest profile). The stored row stays the truth: an entry is used only when its
/// record is byte for byte the row's, so what processing gets is what decoding the row would give;
/// a row stored by another instance, or kept longer than the last `capacity` acceptances, is decoded
/// as before.
final class RecentlyVerified<Value: Sendable>: Sendable {
    private struct Entry {
        var record: Data
        var value: Value
    }

    /// Two generations: new entries go into the current one; when it is full it becomes the previous
    /// one, and the one before is dropped. At most `capacity` entries, without bookkeeping per entry.
    private struct Generations {
        var current: [String: Entry] = [:]
        var previous: [String: Entry] = [:]
    }

    private let generations = Mutex(Generations())
    private let generationSize: Int

    init(capacity: Int) {
        generationSize = max(1, capacity / 2)
    }

    /// Keeps `value`, decoded from (or encoded as) `record`, under the notification's dedupe key.
    func keep(_ value: Value, record: Data, for key: String) {
        // The dropped generation is handed out and freed after the lock is released, not while
        // others wait for it.
        _ = generations.withLock { generations -> [String: Entry] in
            var dropped: [String: Entry] = [:]
            if generations.current.count >= generationSize {
                dropped = generations.previous
                generations.previous = generations.current
                generations.current = Dictionary(minimumCapacity: generationSize)
            }
            generations.current[key] = Entry(record: record, value: value)
            return dropped
        }
    }

    /// The value kept under `key` if it was kept with exactly `record`; removed either way.
    func take(_ key: String, record: Data) -> Value? {
        let entry = generations.withLock { generations in
            generations.current.removeValue(forKey: key) ?? generations.previous.removeValue(forKey: key)
        }
        guard let entry, entry.record == record else { return nil }
        return entry.value
    }
}
