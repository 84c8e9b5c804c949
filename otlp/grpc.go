package otlp

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// exportGRPC sends p in one gRPC call of the profiles service.
func (c *Client) exportGRPC(ctx context.Context, p pprofile.Profiles) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if len(c.md) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, c.md)
	}
	ans, err := c.grpc.Export(ctx, pprofileotlp.NewExportRequestFromProfiles(p))
	if err != nil {
		st := status.Convert(err)
		if st.Code() == codes.Unavailable {
			return &SendError{URL: c.URL, Err: err} // the receiver is away
		}
		return &GRPCError{URL: c.URL, Code: st.Code(), Message: st.Message()}
	}
	if n := ans.PartialSuccess().RejectedProfiles(); n > 0 {
		return &RejectedError{URL: c.URL, Rejected: n, Message: ans.PartialSuccess().ErrorMessage()}
	}
	return nil
}

// GRPCError is a gRPC receiver's answer with another status than OK.
type GRPCError struct {
	URL     string
	Code    codes.Code
	Message string
}

func (e *GRPCError) Error() string {
	return fmt.Sprintf("%s answered %s: %s", e.URL, e.Code, e.Message)
}

// Retryable reports whether the call may succeed later, as the OTLP
// specification lists the codes: Cancelled, DeadlineExceeded,
// ResourceExhausted, Aborted, OutOfRange, Unavailable, DataLoss.
func (e *GRPCError) Retryable() bool {
	switch e.Code {
	case codes.Canceled, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted, codes.OutOfRange, codes.Unavailable, codes.DataLoss:
		return true
	}
	return false
}
