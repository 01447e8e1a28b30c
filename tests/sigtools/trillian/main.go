// Command trillian is test infrastructure: Trillian's log server and sequencer in one process
// over Trillian's in-memory storage (its cmd binaries link only database storages), with one
// log tree made at start, so that Rekor v1 (rekor-server) runs on loopback without a database.
// It serves gRPC on 127.0.0.1 at a free port and prints "ADDRESS TREE_ID" once the tree is
// ready.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/google/trillian"
	"github.com/google/trillian/client"
	"github.com/google/trillian/extension"
	"github.com/google/trillian/log"
	"github.com/google/trillian/monitoring"
	"github.com/google/trillian/quota"
	"github.com/google/trillian/server"
	"github.com/google/trillian/server/admin"
	"github.com/google/trillian/storage"
	_ "github.com/google/trillian/storage/memory"
	"github.com/google/trillian/util/clock"
	"github.com/google/trillian/util/election"
	"github.com/google/trillian/util/election2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "trillian:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	metrics := monitoring.InertMetricFactory{}
	provider, err := storage.NewProvider("memory", metrics)
	if err != nil {
		return err
	}
	registry := extension.Registry{
		AdminStorage:    provider.AdminStorage(),
		LogStorage:      provider.LogStorage(),
		ElectionFactory: election2.NoopFactory{},
		QuotaManager:    quota.Noop(),
		MetricFactory:   metrics,
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	grpcServer := grpc.NewServer()
	trillian.RegisterTrillianLogServer(grpcServer, server.NewTrillianLogRPCServer(registry, clock.System))
	trillian.RegisterTrillianAdminServer(grpcServer, admin.New(registry, nil))
	go func() { _ = grpcServer.Serve(listener) }()

	// The sequencer integrates queued leaves into the tree, every 100 ms.
	sequencer := log.NewOperationManager(log.OperationInfo{
		Registry:    registry,
		BatchSize:   1000,
		NumWorkers:  1,
		RunInterval: 100 * time.Millisecond,
		TimeSource:  clock.System,
		ElectionConfig: election.RunnerConfig{
			PreElectionPause:   10 * time.Millisecond,
			MasterHoldInterval: time.Hour,
			TimeSource:         clock.System,
		},
	}, log.NewSequencerManager(registry, 0))
	go sequencer.OperationLoop(ctx)

	conn, err := grpc.NewClient(listener.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	tree, err := client.CreateAndInitTree(ctx, &trillian.CreateTreeRequest{Tree: &trillian.Tree{
		TreeState:       trillian.TreeState_ACTIVE,
		TreeType:        trillian.TreeType_LOG,
		MaxRootDuration: durationpb.New(time.Hour),
	}}, trillian.NewTrillianAdminClient(conn), trillian.NewTrillianLogClient(conn))
	if err != nil {
		return err
	}
	fmt.Printf("%s %d\n", listener.Addr().String(), tree.TreeId)
	select {}
}
