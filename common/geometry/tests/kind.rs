//! `GeometryType` names: parsing, printing, serde, and `Shape::kind`.

mod support;

use serde::Deserialize;
use serde::de::IntoDeserializer;
use serde::de::value::{Error as DeError, StrDeserializer};
use support::accept;
use zonecast_geometry::{GeometryType, UnknownGeometryType};

fn deserialize(name: &str) -> Result<GeometryType, DeError> {
    let de: StrDeserializer<'_, DeError> = name.into_deserializer();
    GeometryType::deserialize(de)
}

#[test]
fn every_lower_case_name_parses_and_prints_back() {
    for kind in GeometryType::ALL {
        assert_eq!(kind.as_str().parse::<GeometryType>(), Ok(kind));
        assert_eq!(kind.to_string(), kind.as_str());
    }
    let names: Vec<&str> = GeometryType::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(names, ["sphere", "circle", "cuboid", "square", "cylinder", "polygon"]);
}

#[test]
fn names_parse_case_insensitively() {
    assert_eq!("Sphere".parse(), Ok(GeometryType::Sphere));
    assert_eq!("POLYGON".parse(), Ok(GeometryType::Polygon));
    assert_eq!("cYlInDeR".parse(), Ok(GeometryType::Cylinder));
}

#[test]
fn an_unknown_name_is_rejected_with_the_list_of_known_ones() {
    let e = "cube".parse::<GeometryType>();
    assert_eq!(e, Err(UnknownGeometryType("cube".into())));
    let shown = e.map_err(|e| e.to_string());
    assert_eq!(
        shown,
        Err("unknown type 'cube' (expected one of sphere, circle, cuboid, square, cylinder, polygon)".into())
    );
}

#[test]
fn near_misses_are_unknown() {
    for name in ["", " sphere", "sphere ", "spheres", "sphère"] {
        assert!(name.parse::<GeometryType>().is_err(), "{name:?} parsed");
    }
}

#[test]
fn a_huge_unknown_name_is_cut_short_in_the_message() {
    let long = "x".repeat(10_000);
    let shown = long.parse::<GeometryType>().map_err(|e| e.to_string());
    let Err(shown) = shown else { panic!("parsed") };
    assert!(shown.len() < 200, "{shown}");
    assert!(shown.starts_with(&format!("unknown type '{}…'", "x".repeat(64))), "{shown}");
}

#[test]
fn deserializes_from_its_name_case_insensitively() {
    assert_eq!(deserialize("circle").ok(), Some(GeometryType::Circle));
    assert_eq!(deserialize("Square").ok(), Some(GeometryType::Square));
    let e = deserialize("blob").map_err(|e| e.to_string());
    assert_eq!(
        e,
        Err("unknown type 'blob' (expected one of sphere, circle, cuboid, square, cylinder, polygon)".into())
    );
}

#[test]
fn every_shape_reports_its_kind() {
    use GeometryType::*;
    let unit_square = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0]];
    let cases: [(GeometryType, Vec<[f64; 3]>); 6] = [
        (Sphere, vec![[0.0; 3], [1.0, 0.0, 0.0]]),
        (Circle, vec![[0.0; 3], [1.0, 0.0, 0.0]]),
        (Cuboid, vec![[0.0; 3], [1.0, 1.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]),
        (Square, vec![[0.0; 3], [1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]),
        (Cylinder, vec![[0.0; 3], [0.0, 0.0, 1.0], [2.0, 1.0, 0.0]]),
        (Polygon, [&unit_square[..], &[[3.0, 0.0, 0.0], [0.0, 0.0, 1.0]]].concat()),
    ];
    for (kind, rows) in cases {
        assert_eq!(accept(kind, &rows).kind(), kind);
    }
}

#[test]
fn every_kind_refuses_one_row_too_few_or_too_many_by_its_row_count() {
    for kind in GeometryType::ALL {
        let needed = kind.fixed_rows().unwrap_or(GeometryType::MIN_POLYGON_ROWS);
        let error = zonecast_geometry::validate(kind, &vec![[1.0, 0.0, 0.0]; needed - 1]).unwrap_err();
        assert!(error.message.contains("rows"), "{kind} with {} rows: {error}", needed - 1);
        if kind.fixed_rows().is_some() {
            let error = zonecast_geometry::validate(kind, &vec![[1.0, 0.0, 0.0]; needed + 1]).unwrap_err();
            assert_eq!(error.message, format!("{kind} takes {needed} rows, got {}", needed + 1));
        }
    }
}
