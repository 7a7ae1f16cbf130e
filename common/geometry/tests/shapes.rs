//! Acceptance and rejection of the shapes with a fixed row count: sphere, circle, cuboid, square,
//! cylinder; plus the rules every kind shares (row count, finite numbers).

mod support;

use GeometryType::{Circle, Cuboid, Cylinder, Sphere, Square};
use support::{accept, assert_close, length, message, reject};
use zonecast_geometry::{GeometryError, GeometryType, Shape};

const S: f64 = std::f64::consts::FRAC_1_SQRT_2;

fn axis_aligned_cuboid() -> Vec<[f64; 3]> {
    vec![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
}

fn axis_aligned_square() -> Vec<[f64; 3]> {
    vec![[1.0, 2.0, 3.0], [4.0, 5.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
}

fn with_row(mut rows: Vec<[f64; 3]>, i: usize, row: [f64; 3]) -> Vec<[f64; 3]> {
    rows[i] = row;
    rows
}

// ---- shared rules ----

#[test]
fn errors_display_with_and_without_a_row() {
    let row = GeometryError { row: Some(1), message: "radius must be > 0".into() };
    assert_eq!(row.to_string(), "GeometryData[1]: radius must be > 0");
    let list = GeometryError { row: None, message: "sphere takes 2 rows, got 3".into() };
    assert_eq!(list.to_string(), "GeometryData: sphere takes 2 rows, got 3");
}

#[test]
fn a_wrong_row_count_is_rejected_for_every_fixed_kind() {
    let cases = [(Sphere, 2), (Circle, 2), (Cuboid, 5), (Square, 4), (Cylinder, 3)];
    for (kind, rows) in cases {
        for got in [0, rows - 1, rows + 1] {
            let e = reject(kind, &vec![[1.0, 1.0, 1.0]; got]);
            assert_eq!(e.row, None);
            assert_eq!(e.message, format!("{kind} takes {rows} rows, got {got}"));
        }
    }
    assert_eq!(
        message(Sphere, &[[0.0; 3], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]),
        "GeometryData: sphere takes 2 rows, got 3"
    );
}

#[test]
fn nan_and_infinities_are_rejected_in_the_row_they_are_in() {
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert_eq!(message(Sphere, &[[0.0, bad, 0.0], [1.0, 0.0, 0.0]]), "GeometryData[0]: numbers must be finite");
        // Even in a position the layout ignores.
        assert_eq!(message(Circle, &[[0.0; 3], [1.0, 0.0, bad]]), "GeometryData[1]: numbers must be finite");
        let e = reject(Cuboid, &with_row(axis_aligned_cuboid(), 4, [0.0, 0.0, bad]));
        assert_eq!(e.row, Some(4));
        assert!(e.message.contains("must be finite"));
    }
}

// ---- sphere and circle ----

#[test]
fn a_sphere_keeps_its_centre_and_radius_and_ignores_the_rest_of_the_radius_row() {
    let shape = accept(Sphere, &[[1.0, -2.0, 3.5], [2.5, 9.0, -4.0]]);
    assert_eq!(shape, Shape::Sphere { centre: [1.0, -2.0, 3.5], radius: 2.5 });
}

#[test]
fn a_circle_keeps_its_centre_and_radius() {
    let shape = accept(Circle, &[[10.0, 20.0, 0.0], [0.5, 0.0, 0.0]]);
    assert_eq!(shape, Shape::Circle { centre: [10.0, 20.0, 0.0], radius: 0.5 });
}

#[test]
fn a_zero_or_negative_radius_is_rejected() {
    for kind in [Sphere, Circle] {
        for r in [0.0, -0.0, -1.0] {
            assert_eq!(message(kind, &[[0.0; 3], [r, 0.0, 0.0]]), "GeometryData[1]: radius must be > 0");
        }
    }
}

// ---- cuboid ----

#[test]
fn an_axis_aligned_cuboid_is_accepted_as_given() {
    let shape = accept(Cuboid, &axis_aligned_cuboid());
    assert_eq!(
        shape,
        Shape::Cuboid {
            origin: [1.0, 2.0, 3.0],
            extents: [4.0, 5.0, 6.0],
            axes: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
        }
    );
}

#[test]
fn cuboid_axes_of_any_length_are_normalised() {
    let rows = [[0.0; 3], [1.0, 1.0, 1.0], [3.0, 0.0, 0.0], [0.0, 0.25, 0.0], [0.0, 0.0, -7.0]];
    let Shape::Cuboid { axes, .. } = accept(Cuboid, &rows) else { panic!("not a cuboid") };
    assert_eq!(axes, [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, -1.0]]);
}

#[test]
fn a_rotated_and_tilted_cuboid_is_accepted() {
    // 45° about z, then the height axis tilted 45° towards x: not orthogonal, still a box.
    let rows = [[5.0, 5.0, 0.0], [2.0, 1.0, 3.0], [2.0, 2.0, 0.0], [-1.0, 1.0, 0.0], [1.0, 0.0, 1.0]];
    let Shape::Cuboid { axes, extents, .. } = accept(Cuboid, &rows) else { panic!("not a cuboid") };
    assert_eq!(extents, [2.0, 1.0, 3.0]);
    assert_close(axes[0], [S, S, 0.0]);
    assert_close(axes[1], [-S, S, 0.0]);
    assert_close(axes[2], [S, 0.0, S]);
    assert!(axes.iter().all(|a| (length(*a) - 1.0).abs() < 1e-15));
}

#[test]
fn cuboid_axes_just_under_the_parallel_limit_are_accepted() {
    // cos = 0.998 between l and w.
    let w = [0.998, (1.0_f64 - 0.998 * 0.998).sqrt(), 0.0];
    accept(Cuboid, &with_row(axis_aligned_cuboid(), 3, w));
}

#[test]
fn a_zero_or_negative_cuboid_extent_is_rejected() {
    for (extents, name) in [([0.0, 1.0, 1.0], "length"), ([1.0, -1.0, 1.0], "width"), ([1.0, 1.0, 0.0], "height")] {
        assert_eq!(
            message(Cuboid, &with_row(axis_aligned_cuboid(), 1, extents)),
            format!("GeometryData[1]: {name} must be > 0")
        );
    }
}

#[test]
fn a_zero_cuboid_axis_is_rejected_in_its_row() {
    for row in 2..=4 {
        assert_eq!(
            message(Cuboid, &with_row(axis_aligned_cuboid(), row, [0.0; 3])),
            format!("GeometryData[{row}]: axis must not be zero")
        );
    }
}

#[test]
fn parallel_cuboid_axes_are_rejected() {
    let cases = [
        (3, [2.0, 0.0, 0.0], "l and w"),
        (3, [-1.0, 0.0, 0.0], "l and w"),
        (3, [1.0, 0.04, 0.0], "l and w"),
        (4, [1.0, 0.0, 0.01], "l and h"),
        (4, [0.0, -5.0, 0.0], "w and h"),
    ];
    for (row, axis, names) in cases {
        assert_eq!(
            message(Cuboid, &with_row(axis_aligned_cuboid(), row, axis)),
            format!("GeometryData[{row}]: axes {names} are (nearly) parallel")
        );
    }
}

#[test]
fn coplanar_cuboid_axes_are_rejected() {
    // Pairwise far from parallel, but all three in the XY plane: the slabs bound no volume.
    assert_eq!(
        message(Cuboid, &with_row(axis_aligned_cuboid(), 4, [1.0, 1.0, 0.0])),
        "GeometryData[4]: axes l, w and h are (nearly) coplanar"
    );
}

// ---- square ----

#[test]
fn an_axis_aligned_square_is_accepted_and_ignores_the_third_extent() {
    let rows = with_row(axis_aligned_square(), 1, [4.0, 5.0, 99.0]);
    assert_eq!(
        accept(Square, &rows),
        Shape::Square { bottom_left: [1.0, 2.0, 3.0], extents: [4.0, 5.0], axes: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]] }
    );
}

#[test]
fn square_axes_drop_z_and_are_normalised_in_xy() {
    let rows = [[0.0; 3], [1.0, 1.0, 0.0], [3.0, 3.0, 7.0], [-0.5, 0.5, -2.0]];
    let Shape::Square { axes, .. } = accept(Square, &rows) else { panic!("not a square") };
    assert_close(axes[0], [S, S, 0.0]);
    assert_close(axes[1], [-S, S, 0.0]);
    assert!(axes.iter().all(|a| a[2] == 0.0 && (length(*a) - 1.0).abs() < 1e-15));
}

#[test]
fn a_zero_or_negative_square_extent_is_rejected() {
    for (extents, name) in [([0.0, 1.0, 0.0], "length"), ([1.0, -2.0, 0.0], "width")] {
        assert_eq!(
            message(Square, &with_row(axis_aligned_square(), 1, extents)),
            format!("GeometryData[1]: {name} must be > 0")
        );
    }
}

#[test]
fn a_square_axis_with_no_x_or_y_is_a_zero_axis() {
    for row in [2, 3] {
        for axis in [[0.0; 3], [0.0, 0.0, 1.0]] {
            assert_eq!(
                message(Square, &with_row(axis_aligned_square(), row, axis)),
                format!("GeometryData[{row}]: axis must not be zero in x and y (square axes ignore z)")
            );
        }
    }
}

#[test]
fn square_axes_parallel_in_xy_are_rejected() {
    // Not parallel in 3D, but parallel once z is dropped.
    let rows = with_row(axis_aligned_square(), 3, [2.0, 0.0, 5.0]);
    assert_eq!(message(Square, &rows), "GeometryData[3]: axes l and w are (nearly) parallel");
}

// ---- cylinder ----

#[test]
fn an_upright_cylinder_is_accepted() {
    let rows = [[1.0, 2.0, 0.0], [0.0, 0.0, 1.0], [3.0, 0.5, 0.0]];
    assert_eq!(
        accept(Cylinder, &rows),
        Shape::Cylinder { origin: [1.0, 2.0, 0.0], axis: [0.0, 0.0, 1.0], height: 3.0, radius: 0.5 }
    );
}

#[test]
fn a_tilted_cylinder_axis_is_normalised() {
    let rows = [[0.0; 3], [3.0, 0.0, 4.0], [2.0, 1.0, 0.0]];
    let Shape::Cylinder { axis, .. } = accept(Cylinder, &rows) else { panic!("not a cylinder") };
    assert_close(axis, [0.6, 0.0, 0.8]);
}

#[test]
fn a_zero_cylinder_axis_is_rejected() {
    assert_eq!(message(Cylinder, &[[0.0; 3], [0.0; 3], [1.0, 1.0, 0.0]]), "GeometryData[1]: axis must not be zero");
}

#[test]
fn a_zero_or_negative_cylinder_height_or_radius_is_rejected() {
    let up = [0.0, 0.0, 1.0];
    assert_eq!(message(Cylinder, &[[0.0; 3], up, [0.0, 1.0, 0.0]]), "GeometryData[2]: height must be > 0");
    assert_eq!(message(Cylinder, &[[0.0; 3], up, [1.0, -1.0, 0.0]]), "GeometryData[2]: radius must be > 0");
}
