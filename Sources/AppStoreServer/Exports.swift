@_exported import StoreCore
