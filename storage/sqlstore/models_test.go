package sqlstore_test

import (
	"log/slog"
	"reflect"
	"slices"
	"testing"

	"github.com/uptrace/bun"
	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/sqlstore"
	"github.com/payoutkit/payoutkit/storage/sqlstore/sqltest"
)

func TestModelsMatchSchemaSQLite(t *testing.T) { testModelsMatchSchema(t, callerSQLite(t)) }

func TestModelsMatchSchemaPostgres(t *testing.T) {
	testModelsMatchSchema(t, callerPostgres(t, sqltest.FreshSchema(t, sqltest.PostgresServer(t))))
}

// Every table has a model whose columns are the table's, and a payout
// made by the engine reads back through its model with its values.
func testModelsMatchSchema(t *testing.T, db *bun.DB) {
	ctx := t.Context()
	store := newOnCallerDB(t, db)

	columns := func(table string) []string {
		t.Helper()
		var cols []string
		var err error
		if store.Dialect() == sqlstore.DialectSQLite {
			err = db.NewRaw(`SELECT name FROM pragma_table_info(?)`, table).Scan(ctx, &cols)
		} else {
			err = db.NewRaw(`SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?`, table).Scan(ctx, &cols)
		}
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(cols)
		return cols
	}
	var tables []string
	for _, m := range sqlstore.Models() {
		table := db.Table(reflect.TypeOf(m))
		var fields []string
		for _, f := range table.Fields {
			fields = append(fields, f.Name)
		}
		slices.Sort(fields)
		if got := columns(table.Name); !slices.Equal(fields, got) {
			t.Errorf("%s: model columns %v; table columns %v", table.Name, fields, got)
		}
		tables = append(tables, table.Name)
	}
	var all []string
	var err error
	if store.Dialect() == sqlstore.DialectSQLite {
		err = db.NewRaw(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations'`).Scan(ctx, &all)
	} else {
		err = db.NewRaw(`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name <> 'schema_migrations'`).Scan(ctx, &all)
	}
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(all)
	slices.Sort(tables)
	if !slices.Equal(all, tables) {
		t.Errorf("tables %v; models for %v", all, tables)
	}

	engine, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: bcrypt.MinCost, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	nw, err := engine.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Models"})
	if err != nil {
		t.Fatal(err)
	}
	ws := nw.Workspace.ID
	if _, _, err := engine.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: "o-1", Amount: "10.00"}); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.MarkOrderPaid(ctx, ws, "o-1"); err != nil {
		t.Fatal(err)
	}
	p, _, err := engine.CreatePayout(ctx, ws, payoutkit.CreatePayoutRequest{PayoutID: "po-1", Amount: "2.50", Asset: "USDT", Network: "TRON",
		Address: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", PayerID: "cust-1"})
	if err != nil {
		t.Fatal(err)
	}
	var rows []sqlstore.PayoutRow
	if err := db.NewSelect().Model(&rows).Where("workspace_id = ?", ws).Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("%d payout rows", len(rows))
	}
	r := rows[0]
	if r.PayoutID != "po-1" || r.Amount != 250 || r.Status != "submitted" || !r.CreatedAt.Equal(p.CreatedAt) || r.AssetAmount.Valid {
		t.Errorf("payout row %+v; want po-1, 250 cents, submitted, created %s, no asset amount", r, p.CreatedAt)
	}
	var bal sqlstore.BalanceRow
	if err := db.NewSelect().Model(&bal).Where("workspace_id = ?", ws).Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if bal.Available != 750 || bal.InProgress != 250 {
		t.Errorf("balance row %+v; want 750 and 250 cents", bal)
	}
}
