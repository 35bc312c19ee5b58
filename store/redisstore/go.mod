module github.com/arbiterhq/arbiter/store/redisstore

go 1.26.0

require (
	github.com/arbiterhq/arbiter v0.1.0
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
