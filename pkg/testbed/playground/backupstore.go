package playground

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/testbed/s3server"
)

// startBackupStore starts a versitygw on loopback (pkg/testbed/s3server)
// standing for the sample's S3 store: each S3 profile's bucket is created
// on it, and each profile's credentials Secret gets the server's keys in
// the keys the product reads (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY).
func (p *Playground) startBackupStore(ctx context.Context, g *v1alpha1.MysqlFailoverGroup) error {
	dir := filepath.Join(p.Dir, "s3")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	s, err := s3server.Start(ctx, dir)
	if err != nil {
		return err
	}
	p.s3 = s
	for _, prof := range s3Profiles(g) {
		if err := s.Bucket(prof.Storage.S3.Bucket); err != nil {
			return fmt.Errorf("bucket %s: %w", prof.Storage.S3.Bucket, err)
		}
		name := prof.Storage.S3.CredentialsSecretName
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			sec, err := p.CP.Client().CoreV1().Secrets(p.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			sec.Data = map[string][]byte{"AWS_ACCESS_KEY_ID": []byte(s.AccessKey), "AWS_SECRET_ACCESS_KEY": []byte(s.SecretKey)}
			sec.StringData = nil
			_, err = p.CP.Client().CoreV1().Secrets(p.Namespace).Update(ctx, sec, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("credentials Secret %s: %w", name, err)
		}
	}
	return nil
}

func s3Profiles(g *v1alpha1.MysqlFailoverGroup) []v1alpha1.BackupProfile {
	var out []v1alpha1.BackupProfile
	if g.Spec.Backup == nil {
		return nil
	}
	for _, prof := range g.Spec.Backup.Profiles {
		if prof.Storage.Type == v1alpha1.BackupStorageS3 && prof.Storage.S3 != nil {
			out = append(out, prof)
		}
	}
	return out
}

// pointProfilesAtStore sets every S3 profile of the group to the
// playground's server (its endpoint, path-style addressing) with a JSON
// patch, before anything backs up.
func (p *Playground) pointProfilesAtStore(ctx context.Context) error {
	if p.s3 == nil {
		return nil
	}
	g, err := p.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(p.Namespace).Get(ctx, p.Group, metav1.GetOptions{})
	if err != nil {
		return err
	}
	var ops []map[string]any
	if g.Spec.Backup != nil {
		for i, prof := range g.Spec.Backup.Profiles {
			if prof.Storage.Type != v1alpha1.BackupStorageS3 || prof.Storage.S3 == nil {
				continue
			}
			base := fmt.Sprintf("/spec/backup/profiles/%d/storage/s3/", i)
			ops = append(ops, map[string]any{"op": "add", "path": base + "endpointURL", "value": p.s3.Endpoint()},
				map[string]any{"op": "add", "path": base + "forcePathStyle", "value": true})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	_, err = p.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(p.Namespace).Patch(ctx, p.Group, types.JSONPatchType, patch, metav1.PatchOptions{})
	return err
}

// BackupStore is the playground's S3 server (nil if it did not start).
func (p *Playground) BackupStore() *s3server.Server { return p.s3 }
