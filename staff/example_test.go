package staff_test

import (
	"context"
	"fmt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/staff"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

// A workspace's first admin signs in, adds a developer to the team, and
// removes an address-book entry as the actor the team authorised.
func Example() {
	ctx := context.Background()
	store := memstore.New() // or storage/sqlite, storage/postgres: each is a staff.Store too
	engine, _ := payoutkit.New(store, nil)
	team, _ := staff.New(store, nil)

	nw, _ := engine.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Acme"})
	start, err := team.SignIn(ctx, nw.StaffEmail, nw.StaffPassword, "192.0.2.10")
	if err != nil {
		fmt.Println(err)
		return
	}
	caller := staff.Caller{Session: start.Session.Session, ClientAddr: "192.0.2.10"}

	if _, err := team.Authorize(ctx, caller, staff.RoleAdmin); err != nil {
		fmt.Println(err)
		return
	}
	dev, _ := team.AddUser(ctx, caller.Session.WorkspaceID, "dev@example.com", staff.RoleDeveloper, caller.Actor())
	fmt.Println(dev.Email, dev.Role)

	n, err := engine.RemoveAddress(ctx, caller.Session.WorkspaceID, "TRON", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", caller.Actor())
	fmt.Println(n, err)
	// Output:
	// dev@example.com developer
	// 0 <nil>
}
